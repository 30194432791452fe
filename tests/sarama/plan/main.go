// Command sarama-plan runs Sarama's own balance strategies on scenarios, for the oracle
// tests: one JSON scenario per line on stdin ({"strategy":"roundrobin","members":{"m-1":
// ["t",...]},"topics":{"t":12}}, and for "sticky" optionally "user_data":{"m-1":"<base64>"},
// a member's sticky user data as its subscription carries it), one JSON plan per line on
// stdout ({"m-1":[["t",0],...]}): each member's topics by name (Sarama's plan keeps them in a
// map), each topic's partitions in the order Sarama listed them. Every line is a fresh Plan
// call, so a scenario repeated on several lines shows whether Plan's answer varies.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"

	"github.com/IBM/sarama"
)

type scenario struct {
	Strategy string              `json:"strategy"`
	Members  map[string][]string `json:"members"`
	Topics   map[string]int32    `json:"topics"`
	UserData map[string][]byte   `json:"user_data"`
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
		case "sticky":
			strategy = sarama.NewBalanceStrategySticky()
		default:
			fmt.Fprintln(os.Stderr, "unknown strategy:", s.Strategy)
			os.Exit(2)
		}
		members := map[string]sarama.ConsumerGroupMemberMetadata{}
		for id, topics := range s.Members {
			members[id] = sarama.ConsumerGroupMemberMetadata{Topics: topics, UserData: s.UserData[id]}
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
			names := slices.Sorted(maps.Keys(byTopic))
			for _, t := range names {
				for _, p := range byTopic[t] {
					got[id] = append(got[id], []any{t, p})
				}
			}
		}
		b, _ := json.Marshal(got)
		out.Write(append(b, '\n'))
	}
}
