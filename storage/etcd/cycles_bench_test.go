package etcd_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/picketlock/picket/internal/childtest"
	"github.com/picketlock/picket/lease"
	"github.com/picketlock/picket/storage/etcd"
	"github.com/picketlock/picket/storage/etcd/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"
)

// BenchmarkCycles measures what picket on etcd costs the etcd server,
// beside etcd's own concurrency.Mutex on the same member in the same run:
// acquire+release cycles on distinct names (each client its own name), on
// one hot name (every client waiting its turn: hand-overs), and fresh
// grants (a new name each time, never released), at
// PICKET_BENCH_CLIENTS clients (default 64). Besides the rate it reports,
// per operation, the RPCs the server handled by method (from its /metrics:
// grpc_server_handled_total, and grpc_server_msg_received_total for the
// messages of a stream), its raft proposals, the bytes it received from
// clients and wrote to its WAL, the etcd leases it granted, revoked and
// renewed, and, when the member is a process of its own, its CPU time.
//
// The member is $PICKET_ETCD_BIN (or etcd on the PATH) started as a process
// with its data on disk under $PICKET_BENCH_DIR (default /var/tmp), as the
// peers suite runs it; without a binary, etcdtest in this process (no CPU
// figure then). Run it bounded, e.g.
//
//	go test -run '^$' -bench Cycles -benchtime 4000x -p 1 ./storage/etcd/
func BenchmarkCycles(b *testing.B) {
	endpoint, pid := benchMember(b)
	clients := 64
	if s := os.Getenv("PICKET_BENCH_CLIENTS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			b.Fatalf("PICKET_BENCH_CLIENTS=%q", s)
		}
		clients = n
	}
	const ttl = 30 * time.Second // the peers suite's
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cli.Close() })

	for _, w := range []string{"distinct", "fresh", "hot"} {
		picket := func(b *testing.B) {
			st, err := etcd.Open([]string{endpoint}, etcd.WithPrefix("bench-"+lease.NewHolder()[:8]))
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			hot := "hot-" + lease.NewHolder()[:8]
			measure(b, endpoint, pid, clients, func(ctx context.Context, i int, next func() bool) error {
				name, holder := fmt.Sprintf("%s/%d", lease.NewHolder()[:8], i), lease.NewHolder()
				for n := 0; next(); n++ {
					req := lease.AcquireRequest{Name: name, Holder: holder, TTL: ttl}
					switch w {
					case "fresh":
						req.Name = fmt.Sprintf("%s/%d", name, n)
					case "hot":
						req.Name, req.Wait = hot, lease.MaxWait
					}
					g, err := st.Acquire(ctx, req)
					if err != nil {
						return err
					}
					if w != "fresh" {
						if err := st.Release(ctx, lease.ReleaseRequest{Name: req.Name, Holder: holder, Token: g.Token}); err != nil {
							return err
						}
					}
				}
				return nil
			})
		}
		hot := "mutex-hot-" + lease.NewHolder()[:8]
		mutex := func(b *testing.B) {
			measure(b, endpoint, pid, clients, func(ctx context.Context, i int, next func() bool) error {
				s, err := concurrency.NewSession(cli, concurrency.WithTTL(int(ttl.Seconds())))
				if err != nil {
					return err
				}
				defer s.Close()
				name := fmt.Sprintf("mutex-%s/%d", lease.NewHolder()[:8], i)
				for n := 0; next(); n++ {
					pfx := name
					switch w {
					case "fresh":
						pfx = fmt.Sprintf("%s/%d", name, n)
					case "hot":
						pfx = hot
					}
					m := concurrency.NewMutex(s, pfx)
					lock := m.TryLock
					if w == "hot" {
						lock = m.Lock
					}
					if err := lock(ctx); err != nil {
						return err
					}
					if w != "fresh" {
						if err := m.Unlock(ctx); err != nil {
							return err
						}
					}
				}
				return nil
			})
		}
		b.Run("workload="+w+"/impl=mutex", mutex)
		b.Run("workload="+w+"/impl=picket", picket)
	}
}

// measure runs b.N operations on clients goroutines (run gets a function
// that says whether to do one more) and reports the rate and the server's
// work per operation.
func measure(b *testing.B, endpoint string, pid, clients int, run func(ctx context.Context, i int, next func() bool) error) {
	// Let etcd 3.4 give up the write buffer the previous run's cleanup
	// inflated (see benchmarks/peers/picket_etcd.go).
	time.Sleep(time.Second)
	before := scrape(b, endpoint)
	cpu0, self0 := procCPU(pid), procCPU(os.Getpid())
	var left atomic.Int64
	left.Store(int64(b.N))
	next := func() bool { return left.Add(-1) >= 0 }
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	b.ResetTimer()
	t0 := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := range clients {
		wg.Go(func() {
			if err := run(ctx, i, next); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(t0)
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	cpu, self := procCPU(pid)-cpu0, procCPU(os.Getpid())-self0
	after := scrape(b, endpoint)
	n := float64(b.N)
	b.ReportMetric(n/elapsed.Seconds(), "ops/s")
	if pid != 0 {
		b.ReportMetric(float64(cpu.Microseconds())/n, "etcd-µs/op")
		b.ReportMetric(float64(self.Microseconds())/n, "client-µs/op")
	}
	var keys []string
	for k := range after {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var line []string
	for _, k := range keys {
		if d := after[k] - before[k]; d > 0 {
			b.ReportMetric(d/n, k+"/op")
			line = append(line, fmt.Sprintf("%s %.2f", k, d/n))
		}
	}
	b.Logf("per op: %s", strings.Join(line, ", "))
}

// scrape reads the counters of interest from the member's /metrics.
func scrape(b testing.TB, endpoint string) map[string]float64 {
	resp, err := http.Get(endpoint + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		sp := strings.LastIndexByte(line, ' ')
		if sp < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[sp+1:], 64)
		if err != nil {
			continue
		}
		metric := line[:sp]
		var key string
		switch {
		case strings.HasPrefix(metric, "grpc_server_handled_total{"):
			key = "rpc:" + label(metric, "grpc_method")
		case strings.HasPrefix(metric, "grpc_server_msg_received_total{") && label(metric, "grpc_type") != "unary":
			key = "msg:" + label(metric, "grpc_method")
		case metric == "etcd_server_proposals_committed_total":
			key = "proposals"
		case metric == "etcd_debugging_lease_granted_total":
			key = "lease-granted"
		case metric == "etcd_debugging_lease_revoked_total":
			key = "lease-revoked"
		case metric == "etcd_debugging_lease_renewed_total":
			key = "lease-renewed"
		case metric == "etcd_network_client_grpc_received_bytes_total":
			key = "bytes-received"
		case metric == "etcd_disk_wal_write_bytes_total":
			key = "wal-bytes"
		default:
			continue
		}
		out[key] += v
	}
	if err := sc.Err(); err != nil {
		b.Fatal(err)
	}
	return out
}

func label(metric, name string) string {
	i := strings.Index(metric, name+`="`)
	if i < 0 {
		return ""
	}
	rest := metric[i+len(name)+2:]
	return rest[:strings.IndexByte(rest, '"')]
}

// procCPU returns the user + system CPU time of process pid (0: none).
func procCPU(pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	bs, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(bs)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	u, _ := strconv.ParseInt(f[11], 10, 64)
	sy, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+sy) * 10 * time.Millisecond
}

// benchMember starts one etcd member and returns its client URL and, when
// it is a process of its own, its pid.
func benchMember(b *testing.B) (string, int) {
	bin := os.Getenv("PICKET_ETCD_BIN")
	if bin == "" {
		bin, _ = exec.LookPath("etcd")
	}
	if bin == "" {
		return etcdtest.Start(b, 1).Endpoints[0], 0
	}
	base := os.Getenv("PICKET_BENCH_DIR")
	if base == "" {
		base = "/var/tmp"
	}
	dir, err := os.MkdirTemp(base, "picket-etcd-bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	client, peer := "http://"+childtest.Addr(b), "http://"+childtest.Addr(b) // below the ephemeral ports: no listen-and-close race
	cmd := exec.Command(bin, "--name", "m0", "--data-dir", filepath.Join(dir, "m0"),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "m0="+peer, "--initial-cluster-state", "new",
		"--logger", "zap", "--log-level", "error")
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	for deadline := time.Now().Add(time.Minute); ; {
		resp, err := http.Get(client + "/health")
		if err == nil {
			ok := resp.StatusCode == http.StatusOK
			resp.Body.Close()
			if ok {
				break
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("etcd at %s not healthy within a minute", client)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return client, cmd.Process.Pid
}
