package etcd_test

import (
	"log"
	"os"
	"sync"
	"testing"

	"github.com/picketlock/picket/storage/etcd/etcdtest"
)

// The examples run on a real member, started by the first example that
// asks (exampleEndpoints) and stopped after every test and example ran.
var example struct {
	once sync.Once
	dir  string
	c    *etcdtest.Cluster
}

// exampleEndpoints returns the client URLs of a one-member cluster on
// loopback, started on first use.
func exampleEndpoints() []string {
	example.once.Do(func() {
		dir, err := os.MkdirTemp("", "picket-etcd-example-")
		if err != nil {
			log.Fatal(err)
		}
		example.dir = dir
		if example.c, err = etcdtest.StartIn(dir, 1); err != nil {
			log.Fatalf("etcdtest: %v", err)
		}
	})
	return example.c.Endpoints
}

func TestMain(m *testing.M) {
	code := m.Run()
	if example.c != nil {
		example.c.Close()
	}
	if example.dir != "" {
		os.RemoveAll(example.dir)
	}
	os.Exit(code)
}
