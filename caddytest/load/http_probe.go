package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Before a single round, one request per target proves it takes the path its row
// names; the rooms' counters (readRoom) then prove every request of the rounds did.

// admittedCookie visits a room with capacity to spare and returns the Cookie header
// value of the admitted visitor it became.
func admittedCookie(ctx context.Context, site string) (string, error) {
	resp, body, err := get(ctx, site+"/", nil)
	if err != nil {
		return "", err
	}
	for _, c := range resp.Cookies() {
		if strings.HasPrefix(c.Name, "waiting_room_") && body == "ok" {
			return c.Name + "=" + c.Value, nil
		}
	}
	return "", fmt.Errorf("%s: no admitted visitor's cookie (status %d, body %.60q)", site, resp.StatusCode, body)
}

// probe sends each target one request with its headers and checks the answer.
func (b *httpBench) probe(ctx context.Context) error {
	for _, t := range b.targets {
		resp, body, err := get(ctx, t.url, t.headers)
		if err != nil {
			return err
		}
		kind := t.name[len(b.label)+1:]
		cookie := ""
		for _, c := range resp.Cookies() {
			cookie = c.Name
		}
		var ok bool
		switch kind {
		case "bare", "admitted":
			ok = body == "ok"
		case "bare page", "bare 3 KB":
			ok = strings.Trim(body, "x") == "" && len(body) > 1000
		case "new":
			ok = body == "ok" && cookie == "waiting_room_new"
		case "queued":
			// Gzipped, as a browser gets it (get leaves the body as it came).
			ok = strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") && cookie == "waiting_room_queued" &&
				resp.Header.Get("Content-Encoding") == "gzip" && strings.HasPrefix(body, "\x1f\x8b")
		case "queued JSON":
			ok = strings.Contains(body, `"status":"queued"`) && cookie == "waiting_room_queued"
		}
		if !ok || resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: not the %s path: status %d, cookie %q, body %.80q", t.name, kind, resp.StatusCode, cookie, body)
		}
	}
	return nil
}

// get sends one GET with the given "Name: value" headers and reads the whole answer.
func get(ctx context.Context, url string, headers []string) (*http.Response, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, "", err
	}
	for _, h := range headers {
		name, value, _ := strings.Cut(h, ":")
		req.Header.Set(name, strings.TrimSpace(value))
	}
	resp, err := siteClient.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp, string(body), err
}

// roomCounters are the counters of a room, as its instance's admin API reports them.
type roomCounters struct {
	Active        int    `json:"active"`
	Waiting       int    `json:"waiting"`
	AdmittedTotal uint64 `json:"admitted_total"`
	Capacity      int    `json:"capacity"` // in force
}

func readRoom(ctx context.Context, in *instance, room string) (roomCounters, error) {
	var c roomCounters
	resp, body, err := get(ctx, in.admin+"/waiting_room/"+room, nil)
	if err != nil {
		return c, err
	}
	if resp.StatusCode != http.StatusOK {
		return c, fmt.Errorf("admin API, room %s: status %d: %s", room, resp.StatusCode, body)
	}
	return c, json.Unmarshal([]byte(body), &c)
}

// fileName turns a target's name into a file name: "memory queued JSON" becomes
// "memory-queued-json".
func fileName(name string) string {
	return strings.ToLower(strings.ReplaceAll(name, " ", "-"))
}
