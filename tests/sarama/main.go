// Command sarama-member is one Sarama group member for the test tiers: it joins a classic
// consumer group with the given balance strategy, consumes, and prints one JSON line per
// assignment it is given ({"event":"assignment","name":...,"generation":...,"partitions":
// [[topic,partition],...]}). With cooperative-sticky (Sarama's BalanceStrategyCooperativeSticky
// alone, so the group runs the cooperative protocol) one session outlives the rebalances
// and its claims change in place: the member prints each new generation or claim it sees.
// -kafka-version is Sarama's Config.Version, which sets the subscription version it writes
// (2.4 to 3.1: 1, 3.2 and later: 2). SIGTERM or the end of stdin closes it cleanly; SIGKILL
// is a crash.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"reflect"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/IBM/sarama"
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

func strategy(name string) (sarama.BalanceStrategy, error) {
	switch name {
	case "range":
		return sarama.NewBalanceStrategyRange(), nil
	case "roundrobin":
		return sarama.NewBalanceStrategyRoundRobin(), nil
	case "sticky":
		return sarama.NewBalanceStrategySticky(), nil
	case "cooperative-sticky":
		return sarama.NewBalanceStrategyCooperativeSticky(), nil
	}
	return nil, fmt.Errorf("unknown balance strategy %q", name)
}

// member reports each generation's claims as the member's assignment.
type member struct{ name string }

// claimed is the session's claims, sorted by topic and partition.
func claimed(s sarama.ConsumerGroupSession) [][]any {
	assigned := [][]any{}
	claims := s.Claims()
	topics := make([]string, 0, len(claims))
	for t := range claims {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	for _, t := range topics {
		ps := append([]int32(nil), claims[t]...)
		sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
		for _, p := range ps {
			assigned = append(assigned, []any{t, p})
		}
	}
	return assigned
}

func (m member) assignment(s sarama.ConsumerGroupSession) line {
	return line{Event: "assignment", Name: m.name, MemberID: s.MemberID(), Generation: s.GenerationID(), Partitions: claimed(s)}
}

// same reports whether a and b are one map (nil is no map): each cooperative rebalance
// stores a new claims map.
func same(a, b map[string][]int32) bool {
	return a != nil && reflect.ValueOf(a).Pointer() == reflect.ValueOf(b).Pointer()
}

// Setup reports the session's first assignment and watches it: under the cooperative
// protocol the session stays while rebalances change its generation and claims. Sarama
// takes the new generation before it revokes what it gives up and stores the new claims
// after, so a generation is reported once its claims are in place: a member that is still
// revoking (and will rejoin for the follow-up) reports the generation before.
func (m member) Setup(s sarama.ConsumerGroupSession) error {
	first := m.assignment(s)
	emit(first)
	go func() {
		last, _ := json.Marshal(first)
		held := s.Claims() // kept, so that its address is not reused
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-s.Context().Done():
				return
			case <-tick.C:
			}
			claims := s.Claims()
			if same(claims, held) {
				continue
			}
			held = claims
			now := m.assignment(s)
			if b, _ := json.Marshal(now); string(b) != string(last) {
				last = b
				emit(now)
			}
		}
	}()
	return nil
}

func (m member) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (m member) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for {
		select {
		case _, ok := <-c.Messages():
			if !ok {
				return nil
			}
		case <-s.Context().Done():
			return nil
		}
	}
}

func main() {
	brokers := flag.String("bootstrap-server", "", "brokers, comma separated")
	group := flag.String("group", "", "group id")
	name := flag.String("name", "", "the member's name in the scenario")
	topics := flag.String("topics", "", "topics, comma separated")
	strategyName := flag.String("balancer", "range", "range, roundrobin, sticky, cooperative-sticky")
	kafkaVersion := flag.String("kafka-version", "3.6.0", "Sarama's Config.Version")
	instance := flag.String("instance-id", "", "group.instance.id (a static member)")
	session := flag.Duration("session-timeout", 4*time.Second, "session timeout")
	flag.Parse()

	s, err := strategy(*strategyName)
	if err != nil {
		emit(line{Event: "error", Name: *name, Message: err.Error()})
		os.Exit(2)
	}
	version, err := sarama.ParseKafkaVersion(*kafkaVersion)
	if err != nil {
		emit(line{Event: "error", Name: *name, Message: err.Error()})
		os.Exit(2)
	}
	config := sarama.NewConfig()
	config.Version = version
	config.ClientID = *name
	config.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{s}
	config.Consumer.Group.Session.Timeout = *session
	config.Consumer.Group.Heartbeat.Interval = 500 * time.Millisecond
	config.Consumer.Offsets.AutoCommit.Enable = false
	config.Consumer.Offsets.Initial = sarama.OffsetOldest
	if *instance != "" {
		config.Consumer.Group.InstanceId = *instance
	}
	consumer, err := sarama.NewConsumerGroup(strings.Split(*brokers, ","), *group, config)
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
		if err := consumer.Consume(ctx, strings.Split(*topics, ","), member{name: *name}); err != nil {
			if errors.Is(err, sarama.ErrClosedConsumerGroup) {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	consumer.Close()
	emit(line{Event: "closed", Name: *name})
}
