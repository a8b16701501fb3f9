package caddytest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/testredis"
)

// mintFleetPasses asks one instance's admin API for count passes of uses each.
func mintFleetPasses(t *testing.T, nd *node, room string, count, uses int) []string {
	t.Helper()
	body := fmt.Sprintf(`{"count": %d, "uses": %d, "ttl": "1h"}`, count, uses)
	resp, err := http.Post(nd.admin+"/waiting_room/"+room+"/passes", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var res struct{ Passes []string }
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &res) != nil || len(res.Passes) != count {
		t.Fatalf("POST passes on %s: %d %s", nd.name, resp.StatusCode, b)
	}
	return res.Passes
}

// passAnswer is what an API client with a pass (in the header; "" for none) is told.
type passAnswer struct {
	code     int
	admitted bool
	Status   string `json:"status"`
	Pass     string `json:"pass"`
	Position int    `json:"position"`
}

func (g *guest) withPass(base, path, pass string) (passAnswer, error) {
	req, _ := http.NewRequest(http.MethodGet, base+path, nil)
	req.Header.Set("Accept", "application/json")
	if pass != "" {
		req.Header.Set("Waiting-Room-Pass", pass)
	}
	resp, err := g.client.Do(req)
	if err != nil {
		return passAnswer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	a := passAnswer{code: resp.StatusCode}
	if strings.HasPrefix(string(b), "upstream ") {
		a.admitted = true
		return a, err
	}
	if err := json.Unmarshal(b, &a); err != nil {
		return a, fmt.Errorf("%s%s: not JSON: %d %q", base, path, resp.StatusCode, b)
	}
	return a, err
}

// TestMultiInviteOnly: three caddy processes on one Redis. A room made invite-only
// with PATCH on one instance turns away newcomers without a pass on every instance;
// passes minted on one instance are accepted on the others; a pass's uses are counted
// fleet-wide, however many instances its holders arrive at, at once; capacity holds.
func TestMultiInviteOnly(t *testing.T) {
	srv := testredis.Start(t)
	room := uniqueRoom(t)
	const capacity = 2
	f := startFleet(t, 3, func(int) string { return roomBlock(room, "/shop*", capacity, "redis redis://"+srv.Addr) })

	patchFleetRoom(t, f.nodes[0], room, `{"mode": "invite_only"}`)
	for _, nd := range f.nodes {
		eventually(t, "a newcomer without a pass to be turned away on "+nd.name, func() (bool, string) {
			a, err := newGuest().withPass(nd.base, "/shop", "")
			return err == nil && a.Status == "rejected" && a.code == http.StatusServiceUnavailable && !a.admitted,
				fmt.Sprintf("%+v (%v)", a, err)
		})
	}

	// A probe that reached an instance before the change got in: start from an empty
	// room.
	resp, err := http.Post(f.nodes[0].admin+"/waiting_room/"+room+"/reset", "application/json", nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("reset: %v %v", resp, err)
	}
	resp.Body.Close()

	// One pass of 5 uses, tried by 15 newcomers at once, 5 on each instance.
	const uses, tries = 5, 15
	pass := mintFleetPasses(t, f.nodes[1], room, 1, uses)[0]
	var wg sync.WaitGroup
	answers := make([]passAnswer, tries)
	guests := make([]*guest, tries)
	errs := make([]error, tries)
	for i := range tries {
		guests[i] = newGuest()
		wg.Go(func() { answers[i], errs[i] = guests[i].withPass(f.nodes[i%3].base, "/shop", pass) })
	}
	wg.Wait()
	var admitted, queued, refused int
	for i, a := range answers {
		switch {
		case errs[i] != nil:
			t.Fatalf("try %d: %v", i, errs[i])
		case a.admitted:
			admitted++
		case a.Status == "queued" && a.Pass == "":
			queued++
		case a.Status == "rejected" && a.Pass == "invalid":
			refused++
		default:
			t.Fatalf("try %d on %s: %+v", i, f.nodes[i%3].name, a)
		}
	}
	if admitted != capacity || queued != uses-capacity || refused != tries-uses {
		t.Fatalf("a pass of %d uses tried %d times over 3 instances: %d admitted, %d queued, %d refused; want %d, %d, %d (answers %+v)",
			uses, tries, admitted, queued, refused, capacity, uses-capacity, tries-uses, answers)
	}

	// The pass holders keep their standing on every instance with the cookie alone;
	// those refused stay out.
	for i, a := range answers {
		nd := f.nodes[(i+1)%3]
		again, err := guests[i].withPass(nd.base, "/shop", "")
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case a.admitted && !again.admitted, a.Status == "queued" && again.Status != "queued" && !again.admitted,
			a.Status == "rejected" && again.Status != "rejected":
			t.Fatalf("try %d, then on %s with the cookie alone: %+v then %+v", i, nd.name, a, again)
		}
	}
	// A used-up pass on another instance: still refused.
	if a, err := newGuest().withPass(f.nodes[2].base, "/shop", pass); err != nil || a.Status != "rejected" || a.Pass != "invalid" {
		t.Fatalf("the used-up pass once more: %+v (%v)", a, err)
	}
}
