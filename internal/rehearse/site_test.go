package rehearse

import (
	"encoding/json"
	"testing"
)

// A config as `caddy adapt` writes it: rooms in a route, in a subroute, in the
// error routes of another server, and the first room again on another site.
const siteConfig = `{"apps": {"http": {"servers": {
  "srv0": {"listen": [":443"], "routes": [
    {"match": [{"host": ["shop.example"]}], "handle": [{"handler": "subroute", "routes": [
      {"handle": [{"capacity": 400, "handler": "waiting_room", "name": "drop"}]},
      {"handle": [{"handler": "subroute", "routes": [{"handle": [{"handler": "waiting_room", "name": "members", "capacity": 50}]}]}]}
    ]}]},
    {"handle": [{"handler": "reverse_proxy", "upstreams": [{"dial": "localhost:8080"}]}]}
  ]},
  "srv1": {"listen": [":8443"], "routes": [{"handle": [{"name": "drop", "handler": "waiting_room", "capacity": 999}]}],
    "errors": {"routes": [{"handle": [{"handler": "waiting_room", "name": "raffle", "capacity": 10, "mode": "random"}]}]}}
}}}}`

func TestFindRoom(t *testing.T) {
	capacityOf := func(raw json.RawMessage) int {
		var h struct{ Capacity int }
		if err := json.Unmarshal(raw, &h); err != nil {
			t.Fatal(err)
		}
		return h.Capacity
	}
	for _, tc := range []struct {
		config, name string
		capacity     int
		err          string
	}{
		{siteConfig, "drop", 400, ""}, // the first of the two named drop
		{siteConfig, "members", 50, ""},
		{siteConfig, "raffle", 10, ""},
		{siteConfig, "", 0, "the config has 3 waiting rooms (drop, members, raffle): choose one with --room"},
		{siteConfig, "vip", 0, `the config has no waiting room named "vip" (it has: drop, members, raffle)`},
		{`{"apps": {"http": {"servers": {"srv0": {"routes": [{"handle": [{"handler": "waiting_room", "name": "only", "capacity": 7}]}]}}}}}`, "", 7, ""},
		{`{"apps": {"http": {"servers": {"srv0": {"routes": [{"handle": [{"handler": "static_response", "body": "waiting_room"}]}]}}}}}`, "", 0,
			"the config has no waiting_room handler: there is no room to rehearse"},
		{``, "", 0, "no config to read the room from: give --config FILE, or run where the site's Caddyfile is"},
		{`{"apps": [`, "", 0, "reading the config: unexpected EOF"},
	} {
		raw, err := FindRoom([]byte(tc.config), tc.name)
		switch {
		case tc.err != "" && (err == nil || err.Error() != tc.err):
			t.Errorf("room %q: got error %v, want %q", tc.name, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("room %q: %v", tc.name, err)
		case tc.err == "" && capacityOf(raw) != tc.capacity:
			t.Errorf("room %q: found %s, want the one of capacity %d", tc.name, raw, tc.capacity)
		}
	}
}
