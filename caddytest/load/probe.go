package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// Admission probes time what the latency figures promise: from a slot freeing on one
// instance to "admitted" arriving on a waiter's WebSocket held by another.
//
// The room has capacity 1. A holder takes the slot; the probes join behind it, probe i
// holding its socket on instance i+1 (mod the instances). Sample i frees the slot on
// instance i, as a shop's checkout would (the upstream answers with the revoke
// command), and times until probe i hears "admitted"; probe i then holds the slot and
// frees it for sample i+1, on its own instance's neighbour.

// roomPath is where the load rooms live; roomPath+"/done" answers with the revoke.
const roomPath = "/room"

// roomSite is the site of an instance: a room of capacity 1 on the shared Redis with
// sessions and places that outlast any run, in front of a tiny upstream. /done is the
// checkout, inside the room, answering with the revoke command.
func roomSite(room, redisAddr string) string {
	return fmt.Sprintf(`	@room path %[1]s %[1]s/*
	waiting_room @room {
		name %[2]s
		capacity 1
		store redis redis://%[3]s
		session_ttl 1h
		queue_ttl 1h
	}
	@done path %[1]s/done
	handle @done {
		header Waiting-Room-Command revoke
		respond "done"
	}
	respond "upstream {path}"`, roomPath, room, redisAddr)
}

// instanceAddrs is each instance's host:port for site.
func instanceAddrs(ins []*instance, site string) []string {
	addrs := make([]string, len(ins))
	for i, in := range ins {
		addrs[i] = strings.TrimPrefix(in.url(site), in.over.scheme()+"://")
	}
	return addrs
}

// A probe is a waiter the harness holds itself, to time its admission.
type probe struct {
	conn     *waiterConn
	instance int            // where its socket is
	heard    chan probeNews // its admission, or how its socket ended before
}

type probeNews struct {
	at  time.Time
	err error
}

// takeSlot makes the first visitor of an empty room, admitted at once on addr, and
// returns its cookie.
func takeSlot(t transport, addr string) (string, error) {
	resp, err := siteClient.Get(t.scheme() + "://" + addr + roomPath)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(string(body), "upstream ") {
		return "", fmt.Errorf("the first visitor was not admitted: %d %q", resp.StatusCode, body)
	}
	var cookies []string
	for _, c := range resp.Cookies() {
		cookies = append(cookies, c.Name+"="+c.Value)
	}
	return strings.Join(cookies, "; "), nil
}

// joinProbes queues n probes, in order, each with its socket open.
func joinProbes(t transport, addrs []string, n int) ([]*probe, error) {
	var probes []*probe
	d := t.dialer(&net.Dialer{Timeout: handshakeTimeout})
	for i := range n {
		at := (i + 1) % len(addrs)
		c, err := joinAndWait(d, addrs[at], roomPath, "")
		if err != nil {
			closeProbes(probes)
			return nil, fmt.Errorf("probe %d: %w", i, err)
		}
		p := &probe{conn: c, instance: at, heard: make(chan probeNews, 1)}
		go p.listen()
		probes = append(probes, p)
	}
	return probes, nil
}

func closeProbes(probes []*probe) {
	for _, p := range probes {
		p.conn.Close()
	}
}

// listen reads positions until the probe hears "admitted" or its socket ends.
func (p *probe) listen() {
	buf := make([]byte, 2*maxServerMessage)
	for {
		kind, err := p.conn.next(buf)
		if err != nil {
			p.heard <- probeNews{err: err}
			return
		}
		if kind == msgAdmitted {
			p.heard <- probeNews{at: time.Now()}
			return
		}
	}
}

// admissionSamples are what timeAdmissions measured: per sample, slot freed to
// "admitted" heard, and the revoke request alone.
type admissionSamples struct {
	admission []time.Duration
	revoke    []time.Duration
}

// timeAdmissions takes one sample per probe, in order (see the top of the file).
// Samples are spread over the phases of the rooms' 250 ms step and 500 ms push rounds:
// a fixed pause would always land at the same point of them.
func timeAdmissions(ctx context.Context, t transport, addrs []string, holder string, probes []*probe) (admissionSamples, error) {
	var s admissionSamples
	client := &http.Client{Timeout: handshakeTimeout, Transport: siteClient.Transport}
	defer client.CloseIdleConnections()
	for i, p := range probes {
		pause := 100*time.Millisecond + time.Duration(i*137%500)*time.Millisecond
		select {
		case <-ctx.Done():
			return s, ctx.Err()
		case <-time.After(pause):
		}
		at := addrs[i%len(addrs)] // never the instance holding probe i's socket
		start := time.Now()
		if err := checkout(client, t.scheme()+"://"+at, holder); err != nil {
			return s, fmt.Errorf("sample %d: %w", i, err)
		}
		s.revoke = append(s.revoke, time.Since(start))
		select {
		case news := <-p.heard:
			if news.err != nil {
				return s, fmt.Errorf("sample %d: the probe's socket ended before admission: %w", i, news.err)
			}
			s.admission = append(s.admission, news.at.Sub(start))
		case <-time.After(handshakeTimeout):
			return s, fmt.Errorf("sample %d: the probe heard no admission in %v", i, handshakeTimeout)
		case <-ctx.Done():
			return s, ctx.Err()
		}
		holder = p.conn.cookie
	}
	return s, nil
}

// checkout is the holder's request to the checkout path: the upstream's revoke frees
// the slot.
func checkout(client *http.Client, site, cookie string) error {
	req, err := http.NewRequest(http.MethodGet, site+roomPath+"/done", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Cookie", cookie)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if string(body) != "done" {
		return fmt.Errorf("the holder was not let through to the checkout: %d %q", resp.StatusCode, body)
	}
	return nil
}

// pushRound is the hub's push round (waitingroom's pushEvery): a changed position goes
// out at the next one.
const pushRound = 500 * time.Millisecond

// admitFromHead has the admin API of in admit n waiters from the head of the ws room.
func admitFromHead(ctx context.Context, client *http.Client, in *instance, n int) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, in.admin+"/waiting_room/"+wsRoom+"/admit",
		strings.NewReader(fmt.Sprintf(`{"count": %d}`, n)))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("admitting from the head: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("admitting from the head: status %d: %s", resp.StatusCode, body)
	}
	return nil
}

// latencyRows are the figures of a set of samples; label says under which load.
func latencyRows(label string, s admissionSamples) []row {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
	adm, rev := append([]time.Duration(nil), s.admission...), append([]time.Duration(nil), s.revoke...)
	p50, p99, worst := percentile(adm, 0.5), percentile(adm, 0.99), percentile(adm, 1)
	round := ms(pushRound)
	return []row{
		{figure: fmt.Sprintf("slot freed → \"admitted\" on another instance, %s: samples", label),
			value: fmt.Sprint(len(adm))},
		{figure: "  p50", value: ms(p50), baseline: "push round " + round,
			ratio: fmt.Sprintf("%.2f", p50.Seconds()/0.5)},
		{figure: "  p99", value: ms(p99), baseline: "push round " + round,
			ratio: fmt.Sprintf("%.2f", p99.Seconds()/0.5), target: "≤ 1 s (aim 300 ms)", verdict: verdict(len(adm) > 0 && p99 <= time.Second)},
		{figure: "  max", value: ms(worst)},
		{figure: "  the revoke request alone: p50 / p99",
			value: ms(percentile(rev, 0.5)) + " / " + ms(percentile(rev, 0.99))},
	}
}
