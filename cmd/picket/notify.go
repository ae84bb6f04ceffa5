package main

import (
	"github.com/coreos/go-systemd/v22/daemon"
	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
)

// notify tells systemd (a Type=notify unit: docs/picket.service) how the
// server is doing: "READY=1" once the listener is up and the store open, so
// units ordered after picket start only when it answers; "STOPPING=1" when
// it begins to shut down. Outside systemd (no NOTIFY_SOCKET) it does
// nothing; a failure to notify is logged, never fatal.
func notify(logger log.Logger, state string) {
	sent, err := daemon.SdNotify(false, state)
	switch {
	case err != nil:
		level.Warn(logger).Log("msg", "systemd notification failed", "state", state, "err", err)
	case sent:
		level.Debug(logger).Log("msg", "systemd notified", "state", state)
	}
}
