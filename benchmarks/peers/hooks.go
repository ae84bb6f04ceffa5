package peers

// picketOnEtcd, when set (by picket_etcd.go, built with -tags picket_etcd
// until storage/etcd is on main), makes the "picket on etcd" target for an
// etcd cluster.
var picketOnEtcd func(label string, endpoints []string) Target

// EtcdTargets returns the targets of one etcd cluster: etcd's own
// concurrency.Mutex, and picket on that cluster when this build has
// storage/etcd (PicketOnEtcdBuilt).
func EtcdTargets(label string, endpoints []string) []Target {
	ts := []Target{EtcdTarget(label, endpoints)}
	if picketOnEtcd != nil {
		ts = append(ts, picketOnEtcd(label, endpoints))
	}
	return ts
}

// PicketOnEtcdBuilt reports whether this build has the "picket on etcd"
// target.
func PicketOnEtcdBuilt() bool { return picketOnEtcd != nil }
