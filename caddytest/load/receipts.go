package main

import (
	"context"
	"fmt"
	"os"
	"strings"
)

func init() {
	register(section{
		name:  "receipts",
		about: "the room with its draw page and receipts (the default) against `draw_page off`, in the same rounds (wrk): admitted, new and queued visitors, and a waiter's poll, which carries a receipt",
		order: 26,
		run:   runReceipts,
	})
}

// receiptsGoal is the bound for every new visitor and the admitted one: the
// draw page's check before everything, and the receipts, cost them at most 3 %.
const receiptsGoal = 0.97

// receiptRooms are the section's rooms, each once with its draw page (on) and once
// with `draw_page off` (off): a visitor let in (capacity to spare, a long session),
// and a room of one slot whose line everyone after the first joins.
var receiptRooms = []struct{ site, config string }{
	{"admitted", "capacity 1000000000\n\t\tsession_ttl 1h"},
	{"new", "capacity 1000000000"},
	{"queued", "capacity 1\n\t\tsession_ttl 1h\n\t\tqueue_ttl 1h"},
	{"poll", "capacity 1\n\t\tsession_ttl 1h\n\t\tqueue_ttl 1h"},
}

func runReceipts(ctx context.Context, r *rig, o options) ([]row, error) {
	return overTransports(o, func(t transport) ([]row, error) { return measureReceipts(ctx, r, o, t) })
}

// receiptsBench is one instance: every room twice, and the targets on and off.
type receiptsBench struct {
	in      *instance
	targets []wrkTarget // pairs: on, then off, of each figure
	figures []string
}

func measureReceipts(ctx context.Context, r *rig, o options, t transport) ([]row, error) {
	cfg := caddyConfig{}
	for _, rm := range receiptRooms {
		for _, side := range []string{"on", "off"} {
			page := ""
			if side == "off" {
				page = "\n\t\tdraw_page off"
			}
			site := side + rm.site
			cfg[site] = fmt.Sprintf("\twaiting_room {\n\t\tname %s\n\t\t%s%s\n\t\tstore memory {\n\t\t\tfile off\n\t\t}\n\t}\n\trespond \"ok\"",
				site, rm.config, page)
		}
	}
	in, err := r.startCaddyOver("receipts"+fileSuffix(t), cfg, t)
	if err != nil {
		return nil, err
	}
	defer in.stop()
	b := &receiptsBench{in: in}
	for _, f := range []struct {
		figure, site string
		cookie       func(side string) (string, error)
		headers      []string
	}{
		{"admitted visitor (valid room cookie)", "admitted", func(side string) (string, error) {
			return admittedCookie(ctx, in.url(side+"admitted"))
		}, browserHeaders},
		{"new visitor admitted at join", "new", nil, browserHeaders},
		{"new visitor queued, waiting page", "queued", nil, browserHeaders},
		{"new visitor queued, JSON", "queued", nil, []string{jsonAccept}},
		{"a waiter's poll (JSON; on: with its receipt, signed once)", "poll", func(side string) (string, error) {
			return waiterCookie(ctx, in.url(side+"poll"), side == "on")
		}, []string{jsonAccept}},
	} {
		b.figures = append(b.figures, f.figure)
		for _, side := range []string{"on", "off"} {
			headers := f.headers
			if f.cookie != nil {
				c, err := f.cookie(side)
				if err != nil {
					return nil, err
				}
				headers = append([]string{"Cookie: " + c}, headers...)
			}
			b.targets = append(b.targets, wrkTarget{name: "receipts " + side + " " + f.site + fmt.Sprint(len(b.targets)),
				url: in.url(side+f.site) + "/", headers: headers, serve: []*proc{in.proc}})
		}
	}
	if !o.quick {
		if _, err := r.wrk(ctx, b.targets[0], httpConnections); err != nil {
			return nil, err
		}
	}
	samples := make([][]float64, len(b.targets))
	for range r.o.rounds {
		for i, tg := range b.targets {
			res, _, err := r.wrkRound(ctx, tg, httpConnections)
			if err != nil {
				return nil, err
			}
			samples[i] = append(samples[i], res.rps)
		}
	}
	var rows []row
	for i, figure := range b.figures {
		on, off := samples[2*i], samples[2*i+1]
		fmt.Fprintf(os.Stderr, "   %-60s on %s, off %s req/s\n", figure, strings.Join(nums(on), ", "), strings.Join(nums(off), ", "))
		goal := receiptsGoal
		if strings.HasPrefix(figure, "a waiter's poll") {
			goal = 0 // a receipt is what it asks for: its cost is the figure
		}
		rows = append(rows, roundsRow("receipts on ÷ off: "+figure, on, off, "req/s", goal))
	}
	return rows, nil
}

// waiterCookie queues a visitor at site, whose single slot the first visitor (the
// rig's health check, or one of these) holds, and returns its cookie, checking that a
// poll with it carries a receipt when on, and none when off.
func waiterCookie(ctx context.Context, site string, on bool) (string, error) {
	var cookie string
	for try := 0; cookie == "" && try < 3; try++ {
		resp, body, err := get(ctx, site+"/", []string{jsonAccept})
		if err != nil {
			return "", err
		}
		for _, c := range resp.Cookies() {
			if strings.HasPrefix(c.Name, "waiting_room_") && strings.Contains(body, `"status":"queued"`) {
				cookie = c.Name + "=" + c.Value
			}
		}
	}
	if cookie == "" {
		return "", fmt.Errorf("%s: no waiter's cookie", site)
	}
	_, body, err := get(ctx, site+"/", []string{jsonAccept, "Cookie: " + cookie})
	if err != nil {
		return "", err
	}
	if strings.Contains(body, `"receipt":`) != on {
		return "", fmt.Errorf("%s: a waiter's poll (receipts on: %v) answered %.200q", site, on, body)
	}
	return cookie, nil
}
