package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// The harness re-runs its own binary as its client processes; under `go test` that
// binary is the test binary, so TestMain plays the client's part when asked to.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == clientCommand {
		os.Exit(clientMain(os.Args[2:]))
	}
	os.Exit(m.Run())
}

// The ws and latency sections at a tiny scale, asserting what must hold at any scale
// and on any machine: every waiter connected, none lost its socket, was admitted or
// heard nothing while it waited, and every admission sample arrived; with the line
// moving, some were admitted and the rest neither lost their socket nor went unheard.
// The timing and memory figures are measurements, not assertions: they are the
// table's business.
func TestWebSocketSections(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	o := options{quick: true, only: []string{"ws", "latency"}, waiters: 200, instances: 2, clients: 2,
		duration: time.Second, rounds: 1, tls: true}
	rows, err := run(ctx, o)
	printTable(os.Stderr, rows, false)
	if err != nil {
		t.Fatal(err)
	}
	find := func(section, prefix string) []row {
		var found []row
		for _, r := range rows {
			if r.section == section && strings.HasPrefix(strings.TrimSpace(r.figure), prefix) {
				found = append(found, r)
			}
		}
		if len(found) == 0 {
			t.Fatalf("no %s row %q", section, prefix)
		}
		return found
	}
	// The same over plain HTTP and over TLS (-tls), whose rows say "TLS: ".
	for _, over := range []string{"", "TLS: "} {
		if got := find("ws", over+"waiting WebSockets held")[0].value; got != "200 of 200" {
			t.Errorf("%swaiters held: %s", over, got)
		}
		for i, r := range find("ws", over+"sockets ended, told admitted, or silent throughout") {
			if r.value != "0" {
				t.Errorf("%sidle window %d: %s waiters lost their socket, were admitted or heard nothing", over, i+1, r.value)
			}
		}
		if got := find("ws", over+"sockets ended without an admission, or silent throughout")[0].value; got != "0" {
			t.Errorf("%swith the line moving: %s waiters lost their socket or heard nothing", over, got)
		}
		if got := find("ws", over+"told admitted (the line moved for them)")[0].value; got == "0" {
			t.Errorf("%swith the line moving: nobody was admitted from the head", over)
		}
		if got := find("ws", over+`slot freed → "admitted"`)[0].value; got != "5" {
			t.Errorf("%sadmission samples under load: %s of 5", over, got)
		}
	}
	find("ws", "TLS ÷ plain: server memory per waiter")
	if got := find("latency", `slot freed → "admitted"`)[0].value; got != "20" {
		t.Errorf("admission samples: %s of 20", got)
	}
}
