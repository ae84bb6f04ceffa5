package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/picketlock/picket/storage/etcd"
)

// etcdFlags choose an etcd cluster as the store: -etcd with the members'
// client URLs, and the prefix, TLS and user flags that go with it.
type etcdFlags struct {
	endpoints    string
	prefix       string
	ca           string
	cert         string
	key          string
	user         string
	passwordFile string
}

func (f *etcdFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.endpoints, "etcd", "", "cluster mode: the etcd members' client `URLs`, comma-separated (host:port means http://host:port)")
	fs.StringVar(&f.prefix, "etcd-prefix", etcd.DefaultPrefix, "cluster mode: keep every key under this `prefix`")
	fs.StringVar(&f.ca, "etcd-ca", "", "cluster mode: TLS, trusting the CA certificates in this PEM `file`")
	fs.StringVar(&f.cert, "etcd-cert", "", "cluster mode: TLS client certificate (PEM `file`)")
	fs.StringVar(&f.key, "etcd-key", "", "cluster mode: TLS client key (PEM `file`)")
	fs.StringVar(&f.user, "etcd-user", "", "cluster mode: log in to etcd as this `user`")
	fs.StringVar(&f.passwordFile, "etcd-password-file", "", "cluster mode: read the etcd user's password from `file`")
}

// set reports whether -etcd was given.
func (f *etcdFlags) set() bool { return f.endpoints != "" }

// open connects to the cluster the flags name.
func (f *etcdFlags) open(opts ...etcd.Option) (*etcd.Store, error) {
	var endpoints []string
	for _, e := range strings.Split(f.endpoints, ",") {
		if e = strings.TrimSpace(e); e != "" {
			endpoints = append(endpoints, etcdURL(e, f.ca != "" || f.cert != ""))
		}
	}
	if len(endpoints) == 0 {
		return nil, usagef("-etcd: no endpoint in %q", f.endpoints)
	}
	opts = append([]etcd.Option{etcd.WithPrefix(f.prefix)}, opts...)
	if f.ca != "" || f.cert != "" || f.key != "" {
		opts = append(opts, etcd.WithTLS(f.ca, f.cert, f.key))
	}
	if (f.user == "") != (f.passwordFile == "") {
		return nil, usagef("-etcd-user and -etcd-password-file go together")
	}
	if f.user != "" {
		b, err := os.ReadFile(f.passwordFile)
		if err != nil {
			return nil, fmt.Errorf("etcd password: %w", err)
		}
		opts = append(opts, etcd.WithAuth(f.user, strings.TrimRight(string(b), "\r\n")))
	}
	return etcd.Open(endpoints, opts...)
}

// etcdURL turns a bare host:port into a member's URL.
func etcdURL(s string, tls bool) string {
	if strings.Contains(s, "://") {
		return s
	}
	if tls {
		return "https://" + s
	}
	return "http://" + s
}
