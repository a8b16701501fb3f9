package main

import (
	"context"
	"fmt"
)

// The latency section: how soon the waiter at the head hears "admitted" after a slot
// frees on another instance, with nothing else going on (the ws section measures the
// same under its full load of waiters). Two instances share one Redis; the probes
// alternate between them (see probe.go).
func init() {
	register(section{
		name:  "latency",
		about: "admission latency across instances: a slot freed on one, \"admitted\" on another's WebSocket",
		order: 60,
		run:   runLatency,
	})
}

func runLatency(ctx context.Context, r *rig, o options) ([]row, error) {
	samples := 200
	if o.quick {
		samples = 20
	}
	red, err := r.startRedis("latency-redis")
	if err != nil {
		return nil, err
	}
	defer red.stop()
	var ins []*instance
	for i := range 2 {
		in, err := r.startCaddy(fmt.Sprintf("latency-caddy%d", i), caddyConfig{"site": roomSite("load_latency", red.addr)})
		if err != nil {
			return nil, err
		}
		defer in.stop()
		ins = append(ins, in)
	}
	addrs := instanceAddrs(ins, "site")
	holder, err := takeSlot(plainHTTP, addrs[0])
	if err != nil {
		return nil, err
	}
	probes, err := joinProbes(plainHTTP, addrs, samples)
	if err != nil {
		return nil, err
	}
	defer closeProbes(probes)
	s, err := timeAdmissions(ctx, plainHTTP, addrs, holder, probes)
	rows := latencyRows("2 instances, idle", s)
	return rows, err
}
