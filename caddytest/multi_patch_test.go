package caddytest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/testredis"
)

// patchRounds is how many times every setting is changed at once; a PATCH that
// read, changed and wrote back the whole document loses changes in almost every
// round, so a lost one shows within a few.
const patchRounds = 20

// roundSettings are the values of round r, one JSON document per setting: each is
// sent in its own PATCH. Every queue_ttl is below every away_ttl, so no order of
// the changes contradicts the configured timings.
func roundSettings(r int) map[string]string {
	return map[string]string{
		"capacity":      fmt.Sprint(10 + r),
		"rate":          fmt.Sprintf(`{"count": %d, "per": "1m"}`, 100+r),
		"mode":          []string{`"random"`, `"fifo"`}[r%2],
		"message":       fmt.Sprintf(`"round %d"`, r),
		"session_ttl":   fmt.Sprintf(`"%v"`, time.Duration(10+r)*time.Minute),
		"queue_ttl":     fmt.Sprintf(`"%v"`, time.Duration(60+r)*time.Second),
		"away_ttl":      fmt.Sprintf(`"%v"`, time.Duration(20+r)*time.Minute),
		"session_max":   fmt.Sprintf(`"%v"`, time.Duration(60+r)*time.Minute),
		"proof_of_work": fmt.Sprint(r % 10),
	}
}

// TestMultiConcurrentPatchesAllSurvive: two caddy processes on one Redis. In each
// round every setting is PATCHed in a request of its own, all at once, half of them
// on each instance; afterwards every setting holds the value its PATCH set: no
// change overwrote another's.
func TestMultiConcurrentPatchesAllSurvive(t *testing.T) {
	srv := testredis.Start(t)
	room := uniqueRoom(t)
	f := startFleet(t, 2, func(int) string {
		return roomBlock(room, "/shop*", 1, "redis redis://"+srv.Addr, "queue_ttl 1m", "away_ttl 30m")
	})
	lost := 0
	for r := range patchRounds {
		want := roundSettings(r)
		start := make(chan struct{})
		var wg sync.WaitGroup
		errs := make(chan error, len(want))
		i := 0
		for name, value := range want {
			nd := f.nodes[i%len(f.nodes)]
			i++
			wg.Go(func() {
				<-start
				errs <- patchRoom(nd, room, fmt.Sprintf(`{%q: %s}`, name, value))
			})
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("round %d: %v", r, err)
			}
		}
		got := fleetOverrides(t, f.nodes[r%len(f.nodes)], room)
		for name, value := range want {
			if !sameJSON(got[name], value) {
				lost++
				t.Errorf("round %d: %s is %s after its PATCH set %s: the change was lost", r, name, got[name], value)
			}
		}
	}
	if lost > 0 {
		t.Fatalf("%d of %d changes lost", lost, patchRounds*len(roundSettings(0)))
	}
}

// patchRoom PATCHes room on nd's admin endpoint and wants 200.
func patchRoom(nd *node, room, body string) error {
	req, _ := http.NewRequest(http.MethodPatch, nd.admin+"/waiting_room/"+room, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("PATCH %s on %s: %d %s", body, nd.name, resp.StatusCode, b)
	}
	return nil
}

// fleetOverrides reads the room object's overrides from nd's admin endpoint.
func fleetOverrides(t *testing.T, nd *node, room string) map[string]json.RawMessage {
	t.Helper()
	resp, err := http.Get(nd.admin + "/waiting_room/" + room)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var info struct {
		Overrides map[string]json.RawMessage `json:"overrides"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&info); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET the room on %s: %d %v", nd.name, resp.StatusCode, err)
	}
	return info.Overrides
}

// sameJSON reports whether got says what want says, with durations as the room
// object writes them ("1m" is "1m0s").
func sameJSON(got json.RawMessage, want string) bool {
	var g, w any
	if json.Unmarshal(got, &g) != nil || json.Unmarshal([]byte(want), &w) != nil {
		return false
	}
	if r, ok := w.(map[string]any); ok {
		if per, ok := r["per"].(string); ok {
			d, _ := time.ParseDuration(per)
			r["per"] = d.String()
		}
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	return bytes.Equal(gb, wb)
}
