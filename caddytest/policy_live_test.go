package caddytest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// answerOf reads a JSON answer that is not the upstream's.
func answerOf(t *testing.T, body string) queueAnswer {
	t.Helper()
	var q queueAnswer
	if err := json.Unmarshal([]byte(body), &q); err != nil {
		t.Fatalf("not a room answer: %q", body)
	}
	return q
}

func hasRoomCookie(v *visitor) bool {
	u, _ := url.Parse(liveBase)
	for _, c := range v.client.Jar.Cookies(u) {
		if strings.HasPrefix(c.Name, "waiting_room_") {
			return true
		}
	}
	return false
}

// Modes through a real Caddy: configured in the Caddyfile, switched at runtime with
// the admin API, restored with null, and the admin and metrics keep answering.
func TestLivePolicyModes(t *testing.T) {
	room := uniqueRoom(t)
	startLive(t, room, "capacity 1\n\t\tmode reject")
	if _, admitted := newVisitor(t).place("/"); !admitted {
		t.Fatal("the first visitor was not admitted in reject mode")
	}
	turnedAway := newVisitor(t)
	code, hdr, body := turnedAway.get("/", "application/json")
	if code != http.StatusServiceUnavailable || hdr.Get("Retry-After") == "" || answerOf(t, body).Status != "rejected" {
		t.Fatalf("reject mode over capacity: %d, Retry-After %q, %s", code, hdr.Get("Retry-After"), body)
	}
	if hasRoomCookie(turnedAway) {
		t.Fatal("a turned-away visitor got a room cookie")
	}
	if info := roomInfo(t, room); info.Waiting != 0 || info.Mode != "reject" || info.Configured.Mode != "reject" {
		t.Fatalf("after a rejection the room says mode %q (configured %q), %d waiting", info.Mode, info.Configured.Mode, info.Waiting)
	}

	// queue_all: nobody new gets in, the ETA is hidden.
	if code, body := admin(t, http.MethodPatch, "/waiting_room/"+room, `{"mode":"queue_all"}`); code != http.StatusOK {
		t.Fatalf("PATCH mode: %d %s", code, body)
	}
	q, admitted := newVisitor(t).place("/")
	if admitted || q.ETASeconds != nil {
		t.Fatalf("queue_all: admitted %v, answer %+v (want queued, eta null)", admitted, q)
	}

	// passthrough: everyone in, counted, and the waiter from before goes in too.
	admin(t, http.MethodPatch, "/waiting_room/"+room, `{"mode":"passthrough"}`)
	for i := 0; i < 3; i++ {
		if _, admitted := newVisitor(t).place("/"); !admitted {
			t.Fatalf("passthrough: visitor %d was stopped", i+1)
		}
	}
	eventually(t, "everyone admitted and counted", func() (bool, string) {
		info := roomInfo(t, room)
		return info.Active == 5 && info.Waiting == 0, fmt.Sprintf("%+v", info)
	})

	// suspended: no cookie, nothing counted.
	admin(t, http.MethodPatch, "/waiting_room/"+room, `{"mode":"suspended"}`)
	ghost := newVisitor(t)
	if _, admitted := ghost.place("/"); !admitted || hasRoomCookie(ghost) {
		t.Fatalf("suspended: admitted %v, cookie %v", admitted, hasRoomCookie(ghost))
	}
	if info := roomInfo(t, room); info.Active != 5 || info.Mode != "suspended" {
		t.Fatalf("suspended room counted a visitor or lost its mode: %+v", info)
	}
	eventually(t, "the metrics following the room while suspended", func() (bool, string) {
		v := metricValue(t, "caddy_waiting_room_active", room)
		return v == 5, fmt.Sprint(v)
	})

	// null restores the configured mode.
	_, body = admin(t, http.MethodPatch, "/waiting_room/"+room, `{"mode":null}`)
	if !strings.Contains(body, `"mode":"reject"`) {
		t.Fatalf("mode null did not restore reject: %s", body)
	}
	if code, body := admin(t, http.MethodPatch, "/waiting_room/"+room, `{"mode":"sometimes"}`); code != http.StatusBadRequest {
		t.Fatalf("PATCH with a bad mode: %d %s", code, body)
	}
}

// The rate binds before capacity does, and the admin API shows and changes it.
func TestLivePolicyRate(t *testing.T) {
	room := uniqueRoom(t)
	startLive(t, room, "capacity 100\n\t\trate 2 1h")
	for i := 0; i < 2; i++ {
		if _, admitted := newVisitor(t).place("/"); !admitted {
			t.Fatalf("visitor %d under the rate was stopped", i+1)
		}
	}
	q, admitted := newVisitor(t).place("/")
	if admitted || q.Position != 1 {
		t.Fatalf("the third visitor with a rate of 2/h: admitted %v, %+v", admitted, q)
	}
	_, body := admin(t, http.MethodGet, "/waiting_room/"+room, "")
	if !strings.Contains(body, `"rate":{"count":2,"per":"1h0m0s"}`) {
		t.Fatalf("GET does not show the rate: %s", body)
	}
	// A wider rate set at runtime lets the waiter in at the next step.
	if code, body := admin(t, http.MethodPatch, "/waiting_room/"+room, `{"rate":{"count":10,"per":"1s"}}`); code != http.StatusOK ||
		!strings.Contains(body, `"count":10`) {
		t.Fatalf("PATCH rate: %d %s", code, body)
	}
	eventually(t, "the waiter admitted under the new rate", func() (bool, string) {
		info := roomInfo(t, room)
		return info.Waiting == 0, fmt.Sprintf("%+v", info)
	})
	_, body = admin(t, http.MethodPatch, "/waiting_room/"+room, `{"rate":null}`)
	if !strings.Contains(body, `"rate":{"count":2,"per":"1h0m0s"}`) {
		t.Fatalf("rate null did not restore the configured rate: %s", body)
	}
}

// The preview renders the room's page in each state, in the language asked for.
func TestLivePreview(t *testing.T) {
	room := uniqueRoom(t)
	startLive(t, room, "capacity 1")
	resp, err := http.Get(adminBase + "/waiting_room/" + room + "/preview?state=rejected&lang=ko")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	page, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), "지금은 입장할 수 없습니다") ||
		!strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("preview: %d %s", resp.StatusCode, page)
	}
	if code, body := admin(t, http.MethodGet, "/waiting_room/"+room+"/preview?state=queued&position=1234", ""); code != http.StatusOK ||
		!strings.Contains(body, "1,234") {
		t.Fatalf("queued preview at 1234: %d", code)
	}
	if code, body := admin(t, http.MethodGet, "/waiting_room/"+room+"/preview?state=sold", ""); code != http.StatusBadRequest {
		t.Fatalf("preview of an unknown state: %d %s", code, body)
	}
	if code, _ := admin(t, http.MethodPost, "/waiting_room/"+room+"/preview", ""); code != http.StatusMethodNotAllowed {
		t.Fatalf("POST preview: %d", code)
	}
}
