// Command franzgo-member is one franz-go group member for the test tiers: it joins a
// classic consumer group with the given balancer, polls, and prints one JSON line per
// assignment it is given ({"event":"assignment","name":...,"generation":...,"partitions":
// [[topic,partition],...]}). SIGTERM or the end of stdin closes it cleanly (LeaveGroup);
// SIGKILL is a crash.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

type line struct {
	Event      string  `json:"event"`
	Name       string  `json:"name"`
	MemberID   string  `json:"member_id,omitempty"`
	Generation int32   `json:"generation"`
	Partitions [][]any `json:"partitions"`
	Message    string  `json:"message,omitempty"`
}

var out sync.Mutex

func emit(l line) {
	out.Lock()
	defer out.Unlock()
	b, _ := json.Marshal(l)
	fmt.Println(string(b))
}

func balancer(name string) (kgo.GroupBalancer, error) {
	switch name {
	case "range":
		return kgo.RangeBalancer(), nil
	case "roundrobin":
		return kgo.RoundRobinBalancer(), nil
	case "sticky":
		return kgo.StickyBalancer(), nil
	case "cooperative-sticky":
		return kgo.CooperativeStickyBalancer(), nil
	}
	return nil, fmt.Errorf("unknown balancer %q", name)
}

func main() {
	brokers := flag.String("bootstrap-server", "", "brokers, comma separated")
	group := flag.String("group", "", "group id")
	name := flag.String("name", "", "the member's name in the scenario")
	topics := flag.String("topics", "", "topics, comma separated")
	balancerName := flag.String("balancer", "range", "range, roundrobin, sticky, cooperative-sticky")
	instance := flag.String("instance-id", "", "group.instance.id (a static member)")
	session := flag.Duration("session-timeout", 4*time.Second, "session timeout")
	flag.Parse()

	b, err := balancer(*balancerName)
	if err != nil {
		emit(line{Event: "error", Name: *name, Message: err.Error()})
		os.Exit(2)
	}
	var client *kgo.Client
	var held sync.Mutex
	owned := map[string]map[int32]bool{}
	apply := func(c *kgo.Client, change map[string][]int32, add bool) {
		held.Lock()
		defer held.Unlock()
		for t, ps := range change {
			if owned[t] == nil {
				owned[t] = map[int32]bool{}
			}
			for _, p := range ps {
				if add {
					owned[t][p] = true
				} else {
					delete(owned[t], p)
				}
			}
		}
		var tps [][2]any
		for t, ps := range owned {
			for p := range ps {
				tps = append(tps, [2]any{t, p})
			}
		}
		sort.Slice(tps, func(i, j int) bool {
			ti, tj := tps[i][0].(string), tps[j][0].(string)
			if ti != tj {
				return ti < tj
			}
			return tps[i][1].(int32) < tps[j][1].(int32)
		})
		assigned := [][]any{}
		for _, tp := range tps {
			assigned = append(assigned, []any{tp[0], tp[1]})
		}
		member, generation := c.GroupMetadata()
		emit(line{Event: "assignment", Name: *name, MemberID: member, Generation: generation, Partitions: assigned})
	}
	assignedCb := func(_ context.Context, c *kgo.Client, m map[string][]int32) { apply(c, m, true) }
	revokedCb := func(_ context.Context, c *kgo.Client, m map[string][]int32) { apply(c, m, false) }
	opts := []kgo.Opt{
		kgo.SeedBrokers(strings.Split(*brokers, ",")...),
		kgo.ConsumerGroup(*group),
		kgo.ConsumeTopics(strings.Split(*topics, ",")...),
		kgo.Balancers(b),
		kgo.SessionTimeout(*session),
		kgo.HeartbeatInterval(500 * time.Millisecond),
		kgo.DisableAutoCommit(),
		kgo.ClientID(*name),
		kgo.OnPartitionsAssigned(assignedCb),
		kgo.OnPartitionsRevoked(revokedCb),
		kgo.OnPartitionsLost(revokedCb),
	}
	if *instance != "" {
		opts = append(opts, kgo.InstanceID(*instance))
	}
	client, err = kgo.NewClient(opts...)
	if err != nil {
		emit(line{Event: "error", Name: *name, Message: err.Error()})
		os.Exit(1)
	}
	ctx, cancel := context.WithCancel(context.Background())
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	go func() { <-signals; cancel() }()
	go func() {
		buf := make([]byte, 4096)
		for {
			if _, err := os.Stdin.Read(buf); err != nil {
				cancel()
				return
			}
		}
	}()
	for ctx.Err() == nil {
		fetches := client.PollFetches(ctx)
		_ = fetches
	}
	client.LeaveGroup()
	client.Close()
	emit(line{Event: "closed", Name: *name})
}
