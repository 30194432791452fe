// Command franzgo-plan runs franz-go's own sticky balancers on scenarios, for the oracle
// tests: one JSON scenario per line on stdin ({"strategy":"sticky","runs":8,"members":
// [{"id":"m-1","instance_id":null,"metadata":"<base64 JoinGroup metadata>"}],"topics":
// {"t":12}}), one JSON line per scenario on stdout: the distinct answers over "runs" runs
// (franz-go iterates its Go map of topics in a random order on every run), each a list of
// [member id, [[topic, partition], ...]] in the order of the SyncGroup assignments.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type member struct {
	ID         string  `json:"id"`
	InstanceID *string `json:"instance_id"`
	Metadata   []byte  `json:"metadata"`
}

type scenario struct {
	Strategy string           `json:"strategy"`
	Runs     int              `json:"runs"`
	Members  []member         `json:"members"`
	Topics   map[string]int32 `json:"topics"`
}

// leaderOrder sorts the members as a franz-go leader does before balancing: static
// members first by instance id, then the others by member id.
func leaderOrder(ms []kmsg.JoinGroupResponseMember) {
	sort.Slice(ms, func(i, j int) bool {
		l, r := ms[i], ms[j]
		if l.InstanceID != nil {
			return r.InstanceID == nil || *l.InstanceID < *r.InstanceID
		}
		if r.InstanceID != nil {
			return false
		}
		return l.MemberID < r.MemberID
	})
}

func run(s scenario) ([][]any, error) {
	var balancer kgo.GroupBalancer
	switch s.Strategy {
	case "sticky":
		balancer = kgo.StickyBalancer()
	case "cooperative-sticky":
		balancer = kgo.CooperativeStickyBalancer()
	default:
		return nil, fmt.Errorf("unknown strategy %q", s.Strategy)
	}
	members := make([]kmsg.JoinGroupResponseMember, 0, len(s.Members))
	for _, m := range s.Members {
		jm := kmsg.NewJoinGroupResponseMember()
		jm.MemberID = m.ID
		jm.InstanceID = m.InstanceID
		jm.ProtocolMetadata = append([]byte(nil), m.Metadata...)
		members = append(members, jm)
	}
	leaderOrder(members)
	mb, wanted, err := balancer.MemberBalancer(members)
	if err != nil {
		return nil, err
	}
	// The leader balances the topics the members want, with the counts it knows.
	topics := map[string]int32{}
	for t := range wanted {
		if n, ok := s.Topics[t]; ok {
			topics[t] = n
		}
	}
	var into kgo.IntoSyncAssignment
	if withErr, ok := mb.(kgo.GroupMemberBalancerOrError); ok {
		if into, err = withErr.BalanceOrError(topics); err != nil {
			return nil, err
		}
	} else {
		into = mb.Balance(topics)
	}
	var out [][]any
	for _, a := range into.IntoSyncAssignment() {
		var ma kmsg.ConsumerMemberAssignment
		if err := ma.ReadFrom(a.MemberAssignment); err != nil {
			return nil, err
		}
		tps := [][]any{}
		for _, t := range ma.Topics {
			for _, p := range t.Partitions {
				tps = append(tps, []any{t.Topic, p})
			}
		}
		out = append(out, []any{a.MemberID, tps})
	}
	return out, nil
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<26)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for in.Scan() {
		var s scenario
		if err := json.Unmarshal(in.Bytes(), &s); err != nil {
			fmt.Fprintln(os.Stderr, "bad scenario:", err)
			os.Exit(2)
		}
		seen := map[string]bool{}
		answers := []json.RawMessage{}
		for i := 0; i < max(s.Runs, 1); i++ {
			plan, err := run(s)
			if err != nil {
				fmt.Fprintln(os.Stderr, "balance:", err)
				os.Exit(1)
			}
			b, _ := json.Marshal(plan)
			if !seen[string(b)] {
				seen[string(b)] = true
				answers = append(answers, b)
			}
		}
		b, _ := json.Marshal(answers)
		out.Write(append(b, '\n'))
	}
}
