// Command sarama-plan runs Sarama's own balance strategies on scenarios, for the oracle
// tests: one JSON scenario per line on stdin ({"strategy":"roundrobin","members":{"m-1":
// ["t",...]},"topics":{"t":12}}, and for "sticky" optionally "user_data":{"m-1":"<base64>"},
// a member's sticky user data as its subscription carries it, for "cooperative-sticky"
// "owned":{"m-1":[["t",0],...]} and "generation":{"m-1":3}, a version 2 subscription's owned
// partitions and generation), one JSON plan per line on
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
	Owned    map[string][][2]any `json:"owned"`
	Gen      map[string]int32    `json:"generation"`
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
		case "cooperative-sticky":
			strategy = sarama.NewBalanceStrategyCooperativeSticky()
		default:
			fmt.Fprintln(os.Stderr, "unknown strategy:", s.Strategy)
			os.Exit(2)
		}
		members := map[string]sarama.ConsumerGroupMemberMetadata{}
		for id, topics := range s.Members {
			meta := sarama.ConsumerGroupMemberMetadata{Topics: topics, UserData: s.UserData[id]}
			if s.Strategy == "cooperative-sticky" {
				meta.Version, meta.GenerationID = 2, -1
				if g, ok := s.Gen[id]; ok {
					meta.GenerationID = g
				}
				byTopic := map[string][]int32{}
				var order []string
				for _, tp := range s.Owned[id] {
					t := tp[0].(string)
					if _, seen := byTopic[t]; !seen {
						order = append(order, t)
					}
					byTopic[t] = append(byTopic[t], int32(tp[1].(float64)))
				}
				for _, t := range order {
					meta.OwnedPartitions = append(meta.OwnedPartitions, &sarama.OwnedPartition{Topic: t, Partitions: byTopic[t]})
				}
			}
			members[id] = meta
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
