package caddytest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/testredis"
)

// handoffAnswer is the JSON answer to a request for a hand-off code.
type handoffAnswer struct {
	Room           string `json:"room"`
	Status         string `json:"status"`
	HandoffURL     string `json:"handoff_url"`
	HandoffQR      string `json:"handoff_qr"`
	ExpiresSeconds int    `json:"expires_seconds"`
}

// askHandoff asks base for a code for the guest's place, as a JSON client does.
func (g *guest) askHandoff(base, path string) (handoffAnswer, error) {
	req, _ := http.NewRequest(http.MethodGet, base+path, nil)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Waiting-Room-Handoff", "new")
	resp, err := g.client.Do(req)
	if err != nil {
		return handoffAnswer{}, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var a handoffAnswer
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &a) != nil || a.HandoffURL == "" {
		return a, fmt.Errorf("asking %s%s for a code: %d %q", base, path, resp.StatusCode, short(string(b)))
	}
	return a, nil
}

// handoffPlace is what an API client is told (handoff says whether a code held).
type handoffPlace struct {
	Status   string `json:"status"`
	Position int    `json:"position"`
	Handoff  string `json:"handoff"`
}

// openLink opens a hand-off link on base (the link's own host replaced) as a JSON
// client.
func (g *guest) openLink(t *testing.T, link, base string) handoffPlace {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	code, body, err := g.get(base, u.RequestURI(), "application/json")
	if err != nil {
		t.Fatal(err)
	}
	var p handoffPlace
	if err := json.Unmarshal([]byte(body), &p); err != nil {
		t.Fatalf("opening the link on %s: %d %q", base, code, short(body))
	}
	return p
}

// TestMultiHandoffIsUsedOnce: three caddy processes on one Redis. A code asked for
// on instance 1 moves the place when opened on instance 2 (same position; the old
// device's waiting socket, held by instance 3, is closed as a lost place's, and its
// next request there is told the place moved), and opened again on instance 3 it
// makes an ordinary newcomer told the code did not hold; the fleet counts one
// hand-off.
func TestMultiHandoffIsUsedOnce(t *testing.T) {
	srv := testredis.Start(t)
	room := uniqueRoom(t)
	f := startFleet(t, 3, func(int) string { return roomBlock(room, "/shop*", 1, "redis redis://"+srv.Addr) })
	first, second, third := f.nodes[0], f.nodes[1], f.nodes[2]

	if _, admitted, err := newGuest().place(first.base, "/shop"); err != nil || !admitted {
		t.Fatalf("the first visitor to an empty room: admitted %v (%v)", admitted, err)
	}
	laptop, behind := newGuest(), newGuest()
	if q, _, err := laptop.place(first.base, "/shop"); err != nil || q.Position != 1 {
		t.Fatalf("the laptop in line: %+v (%v)", q, err)
	}
	if q, _, err := behind.place(first.base, "/shop"); err != nil || q.Position != 2 {
		t.Fatalf("the waiter behind: %+v (%v)", q, err)
	}

	a, err := laptop.askHandoff(first.base, "/shop")
	if err != nil {
		t.Fatal(err)
	}
	if a.Status != "queued" || a.ExpiresSeconds < 590 || a.ExpiresSeconds > 600 || !strings.Contains(a.HandoffURL, "/shop?waiting_room_handoff=") ||
		!strings.HasPrefix(a.HandoffQR, "data:image/png;base64,") {
		t.Fatalf("the code asked for on %s: %+v", first.name, a)
	}

	ctx := context.Background()
	sock, err := laptop.socket(ctx, third.base, "/shop")
	if err != nil {
		t.Fatal(err)
	}
	defer sock.CloseNow()
	if m, err := readMessage(ctx, sock); err != nil || m.Position != 1 {
		t.Fatalf("the laptop's socket on %s: %+v (%v)", third.name, m, err)
	}
	closed := make(chan error, 1)
	go func() {
		for {
			if _, err := readMessage(ctx, sock); err != nil {
				closed <- err
				return
			}
		}
	}()

	phone := newGuest()
	if p := phone.openLink(t, a.HandoffURL, second.base); p.Status != "queued" || p.Position != 1 || p.Handoff != "" {
		t.Fatalf("the phone opening the link on %s: %+v, want queued at 1", second.name, p)
	}
	if q, _, err := phone.place(third.base, "/shop"); err != nil || q.Position != 1 {
		t.Fatalf("the phone with its cookie on %s: %+v (%v), want still at 1", third.name, q, err)
	}
	select {
	case err := <-closed:
		if websocket.CloseStatus(err) != 4001 {
			t.Fatalf("the laptop's socket on %s after the move on %s: %v, want closed 4001 (place lost)", third.name, second.name, err)
		}
	case <-time.After(liveness):
		t.Fatalf("the laptop's socket on %s was still open %v after the move on %s", third.name, liveness, second.name)
	}
	if code, body, err := laptop.get(third.base, "/shop", "application/json"); err != nil || !strings.Contains(body, `"status":"moved"`) {
		t.Fatalf("the laptop on %s: %d %q (%v), want told its place moved", third.name, code, short(body), err)
	}
	if q, _, err := behind.place(second.base, "/shop"); err != nil || q.Position != 2 {
		t.Fatalf("the waiter behind on %s: %+v (%v), want still at 2", second.name, q, err)
	}

	thief := newGuest()
	if p := thief.openLink(t, a.HandoffURL, third.base); p.Status != "queued" || p.Position != 3 || p.Handoff != "invalid" {
		t.Fatalf("the link opened again on %s: %+v, want a newcomer at 3 told the code did not hold", third.name, p)
	}
	var obj struct {
		Handoffs int `json:"handoffs"`
	}
	resp, err := http.Get(second.admin + "/waiting_room/" + room)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&obj); err != nil || obj.Handoffs != 1 {
		t.Fatalf("the room object counts %d hand-offs (%v), want 1", obj.Handoffs, err)
	}
	counted := 0.0
	for _, nd := range f.nodes {
		counted += fleetMetric(t, nd, "caddy_waiting_room_handoffs_total", room)
	}
	if counted != 1 {
		t.Fatalf("caddy_waiting_room_handoffs_total summed over the instances: %v, want 1", counted)
	}
}
