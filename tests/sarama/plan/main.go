// Command sarama-plan runs Sarama's own balance strategies on scenarios, for the oracle
// tests: one JSON scenario per line on stdin ({"strategy":"roundrobin","members":{"m-1":
// ["t",...]},"topics":{"t":12}}), one JSON plan per line on stdout ({"m-1":[["t",0],...]},
// each member's partitions in the order Sarama listed them).
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"

	"github.com/IBM/sarama"
)

type scenario struct {
	Strategy string              `json:"strategy"`
	Members  map[string][]string `json:"members"`
	Topics   map[string]int32    `json:"topics"`
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<24)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for in.Scan() {
		var s scenario
		if err := json.Unmarshal(in.Bytes(), &s); err != nil {
			fmt.Fprintln(os.Stderr, "bad scenario:", err)
			os.Exit(2)
		}
		var strategy sarama.BalanceStrategy
		switch s.Strategy {
		case "range":
			strategy = sarama.NewBalanceStrategyRange()
		case "roundrobin":
			strategy = sarama.NewBalanceStrategyRoundRobin()
		default:
			fmt.Fprintln(os.Stderr, "unknown strategy:", s.Strategy)
			os.Exit(2)
		}
		members := map[string]sarama.ConsumerGroupMemberMetadata{}
		for id, topics := range s.Members {
			members[id] = sarama.ConsumerGroupMemberMetadata{Topics: topics}
		}
		topics := map[string][]int32{}
		for t, n := range s.Topics {
			for p := int32(0); p < n; p++ {
				topics[t] = append(topics[t], p)
			}
		}
		plan, err := strategy.Plan(members, topics)
		if err != nil {
			fmt.Fprintln(os.Stderr, "plan:", err)
			os.Exit(1)
		}
		got := map[string][][]any{}
		for id := range s.Members {
			got[id] = [][]any{}
		}
		for id, byTopic := range plan {
			for t, ps := range byTopic {
				for _, p := range ps {
					got[id] = append(got[id], []any{t, p})
				}
			}
		}
		b, _ := json.Marshal(got)
		out.Write(append(b, '\n'))
	}
}
