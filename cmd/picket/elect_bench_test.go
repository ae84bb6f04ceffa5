//go:build linux

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"

	"github.com/picketlock/picket/httpapi"
	"github.com/picketlock/picket/internal/childtest"
	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/etcd"
	"github.com/picketlock/picket/storage/sqlite"
)

// The benchmark's followers are this test binary too: the child
// "follow-worker" (internal/childtest) runs followWorkerMain.
func init() {
	childtest.Register("follow-worker", func() int { return followWorkerMain(os.Stdout, os.Stderr) })
}

// followConfig is what a follower is told, as JSON in PICKET_ELECT_CONFIG.
// Store is one of electConfig's, or "etcd-election": etcd's own
// concurrency.Election on the prefix Name.
type followConfig = electConfig

// followWorkerMain observes the election and prints, for each leader, one
// line "VALUE NANOS": the value the leader published and the instant it was
// seen on CLOCK_BOOTTIME (the clock every process on the host shares).
func followWorkerMain(stdout, stderr io.Writer) int {
	var cfg followConfig
	if err := json.Unmarshal([]byte(os.Getenv(electConfigEnv)), &cfg); err != nil {
		fmt.Fprintf(stderr, "follower: %v\n", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.MaxRun)
	defer cancel()
	go func() { // the benchmark closes stdin to stop us
		io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	out := bufio.NewWriter(stdout)
	seen := func(value string) {
		fmt.Fprintf(out, "%s %d\n", value, sharedNow())
		out.Flush()
	}
	if cfg.Store == "etcd-election" {
		cli, err := clientv3.New(clientv3.Config{Endpoints: strings.Split(cfg.Addr, ","), Logger: zap.NewNop()})
		if err != nil {
			fmt.Fprintf(stderr, "follower: %v\n", err)
			return 1
		}
		defer cli.Close()
		s, err := concurrency.NewSession(cli)
		if err != nil {
			fmt.Fprintf(stderr, "follower: %v\n", err)
			return 1
		}
		defer s.Close()
		for resp := range concurrency.NewElection(s, cfg.Name).Observe(ctx) {
			seen(string(resp.Kvs[0].Value))
		}
		return 0
	}
	st, closeStore, err := openElectStore(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "follower: %v\n", err)
		return 1
	}
	defer closeStore()
	for l := range lease.NewElection(mustManager(st), cfg.Name, cfg.TTL).Observe(ctx) {
		seen(l.Value)
	}
	return 0
}

// followers are the benchmark's follower processes, reporting "VALUE
// NANOS" lines on one channel.
type followers struct {
	procs []*childtest.Proc
	lines chan followLine
}

type followLine struct {
	value string
	at    int64
}

func startFollowers(b *testing.B, cfg followConfig, n int) *followers {
	b.Helper()
	f := &followers{lines: make(chan followLine, 64*n)}
	cfg.MaxRun = time.Hour
	js, _ := json.Marshal(cfg)
	for range n {
		p := childtest.Start(b, nil, "follow-worker", childtest.Options{
			Env: []string{electConfigEnv + "=" + string(js)},
			OnLine: func(line string) {
				v, at, _ := strings.Cut(line, " ")
				ns, _ := strconv.ParseInt(at, 10, 64)
				f.lines <- followLine{v, ns}
			},
		})
		f.procs = append(f.procs, p)
	}
	b.Cleanup(func() {
		for _, p := range f.procs {
			p.CloseStdin()
			p.Wait(10 * time.Second) // then killed
		}
	})
	return f
}

// await waits until every follower has reported value and returns when
// each saw it, or fails after a minute (a hang, not a speed target).
func (f *followers) await(b *testing.B, value string) []int64 {
	var ats []int64
	limit := time.After(time.Minute)
	for len(ats) < len(f.procs) {
		select {
		case l := <-f.lines:
			if l.value == value {
				ats = append(ats, l.at)
			}
		case <-limit:
			b.Fatalf("%d of %d followers saw leader %q within a minute", len(ats), len(f.procs), value)
		}
	}
	return ats
}

// latencies collects how long after a grant's request each follower saw
// it, and reports quantiles.
type latencies []time.Duration

func (l *latencies) add(sent int64, ats []int64) {
	for _, at := range ats {
		*l = append(*l, time.Duration(at-sent))
	}
}

func (l latencies) q(p float64) time.Duration {
	s := slices.Clone(l)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

func (l latencies) report(b *testing.B, unit string) {
	b.ReportMetric(float64(l.q(0.5))/1e6, "p50-ms"+unit)
	b.ReportMetric(float64(l.q(0.99))/1e6, "p99-ms"+unit)
	b.ReportMetric(float64(l.q(1))/1e6, "max-ms"+unit)
}

// electFollowers is the number of follower processes of each benchmark.
const electFollowers = 3

// BenchmarkElectFollow measures how soon followers in other processes learn
// of a new leader: per iteration the leader (this process) campaigns on a
// free name with a fresh value, the followers (electFollowers processes,
// each observing with Election.Observe) print when they see it, and the
// leader resigns once all have. The latency is counted from the instant
// before the leader's acquire was sent, an upper bound of the time from the
// grant's commit ("p99-ms"), and from the instant Campaign returned to the
// leader, a lower bound ("-after-return"; negative when a follower learned
// before the leader did); p50/p99/max over every follower of every
// iteration. Sub-benchmarks: sqlite (leader and followers on one file),
// http (all through "picket serve" on loopback, over a file). Run it
// bounded:
//
//	go -C cmd/picket test -run '^$' -bench ElectFollow -benchtime 300x
func BenchmarkElectFollow(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) {
		cfg := followConfig{Store: "db", Addr: filepath.Join(b.TempDir(), "picket.db"), Name: "bench/leader", TTL: 30 * time.Second}
		st, err := sqlite.Open(cfg.Addr)
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		benchFollow(b, cfg, st)
	})
	b.Run("http", func(b *testing.B) {
		s := startServer(b, filepath.Join(b.TempDir(), "picket.db"))
		cfg := followConfig{Store: "server", Addr: s.url, Name: "bench/leader", TTL: 30 * time.Second}
		c, err := httpapi.NewClient(s.url)
		if err != nil {
			b.Fatal(err)
		}
		benchFollow(b, cfg, c)
	})
}

func benchFollow(b *testing.B, cfg followConfig, st lease.Store) {
	f := startFollowers(b, cfg, electFollowers)
	e := lease.NewElection(mustManager(st), cfg.Name, cfg.TTL)
	ctx := context.Background()
	term := func(value string) (sent, got int64, t *lease.Term) {
		sent = sharedNow()
		t, err := e.Campaign(ctx, value)
		if err != nil {
			b.Fatal(err)
		}
		return sent, sharedNow(), t
	}
	_, _, t := term("warm-up") // every follower is watching once it has seen this
	f.await(b, "warm-up")
	t.Resign(ctx)
	var fromSend, fromGrant latencies
	b.ResetTimer()
	for i := range b.N {
		v := strconv.Itoa(i)
		sent, got, t := term(v)
		ats := f.await(b, v)
		fromSend.add(sent, ats)
		fromGrant.add(got, ats)
		t.Resign(ctx)
	}
	b.StopTimer()
	fromSend.report(b, "")
	fromGrant.report(b, "-after-return")
}

// BenchmarkElectFollowEtcd measures the same on one etcd member (a process:
// $PICKET_ETCD_BIN, or etcd on the PATH), picket's election beside etcd's own
// concurrency.Election (Campaign, Observe, Resign), iterations alternating
// between the two in one run, each with its own electFollowers follower
// processes. Reported: p50/p99/max of each ("-picket", "-etcd") and the
// ratio of the p99s (p99-ratio: picket over etcd).
//
//	. .ci/etcd && go -C cmd/picket test -run '^$' -bench ElectFollowEtcd -benchtime 300x
func BenchmarkElectFollowEtcd(b *testing.B) {
	c := startEtcdClusterOf(b, etcdBinary(b), 1, 100, 1000)
	endpoints := strings.Join(c.endpoints, ",")
	ctx := context.Background()

	pcfg := followConfig{Store: "etcd", Addr: endpoints, Prefix: "bench", Name: "bench/leader", TTL: 30 * time.Second}
	st, err := etcd.Open(c.endpoints, etcd.WithPrefix(pcfg.Prefix))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	pf := startFollowers(b, pcfg, electFollowers)
	pe := lease.NewElection(mustManager(st), pcfg.Name, pcfg.TTL)

	ecfg := followConfig{Store: "etcd-election", Addr: endpoints, Name: "/native/leader"}
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.endpoints, Logger: zap.NewNop()})
	if err != nil {
		b.Fatal(err)
	}
	defer cli.Close()
	sess, err := concurrency.NewSession(cli, concurrency.WithTTL(30))
	if err != nil {
		b.Fatal(err)
	}
	defer sess.Close()
	ef := startFollowers(b, ecfg, electFollowers)
	ee := concurrency.NewElection(sess, ecfg.Name)

	// Each side: latencies from before the campaign was sent, and from its
	// return to the leader.
	var pl, pr, el, er latencies
	picket := func(v string) {
		sent := sharedNow()
		t, err := pe.Campaign(ctx, v)
		if err != nil {
			b.Fatal(err)
		}
		got := sharedNow()
		ats := pf.await(b, v)
		pl.add(sent, ats)
		pr.add(got, ats)
		t.Resign(ctx)
	}
	native := func(v string) {
		sent := sharedNow()
		if err := ee.Campaign(ctx, v); err != nil {
			b.Fatal(err)
		}
		got := sharedNow()
		ats := ef.await(b, v)
		el.add(sent, ats)
		er.add(got, ats)
		if err := ee.Resign(ctx); err != nil {
			b.Fatal(err)
		}
	}
	picket("warm-up")
	native("warm-up")
	pl, pr, el, er = nil, nil, nil, nil
	b.ResetTimer()
	for i := range b.N {
		v := strconv.Itoa(i)
		if i%2 == 0 {
			picket(v)
			native(v)
		} else {
			native(v)
			picket(v)
		}
	}
	b.StopTimer()
	pl.report(b, "-picket")
	el.report(b, "-etcd")
	pr.report(b, "-picket-after-return")
	er.report(b, "-etcd-after-return")
	if p := el.q(0.99); p > 0 {
		b.ReportMetric(float64(pl.q(0.99))/float64(p), "p99-ratio")
	}
}
