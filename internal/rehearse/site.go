package rehearse

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// FindRoom is the waiting room to rehearse in a site's config, adapted to JSON (as
// `caddy adapt` writes it): the JSON of its waiting_room handler as Caddy hands it
// to the module (without "handler"), found at any depth (routes, subroutes,
// handle_errors), and named name; with name "", the config's only room. Handlers
// with the same name are the same queue: the first is taken. The errors say what
// the config has.
func FindRoom(config []byte, name string) (json.RawMessage, error) {
	if len(bytes.TrimSpace(config)) == 0 {
		return nil, errors.New("no config to read the room from: give --config FILE, or run where the site's Caddyfile is")
	}
	rooms, err := findRooms(config)
	if err != nil {
		return nil, fmt.Errorf("reading the config: %w", err)
	}
	var names []string
	byName := map[string]json.RawMessage{}
	for _, raw := range rooms {
		var fields map[string]json.RawMessage
		_ = json.Unmarshal(raw, &fields) // an object: the walk found it
		var name string
		_ = json.Unmarshal(fields["name"], &name)
		if _, seen := byName[name]; !seen {
			delete(fields, "handler")
			names = append(names, name)
			byName[name], _ = json.Marshal(fields)
		}
	}
	switch {
	case len(names) == 0:
		return nil, errors.New("the config has no waiting_room handler: there is no room to rehearse")
	case name != "":
		if raw, ok := byName[name]; ok {
			return raw, nil
		}
		return nil, fmt.Errorf("the config has no waiting room named %q (it has: %s)", name, strings.Join(names, ", "))
	case len(names) > 1:
		return nil, fmt.Errorf("the config has %d waiting rooms (%s): choose one with --room", len(names), strings.Join(names, ", "))
	}
	return byName[names[0]], nil
}

// findRooms is every object of config with "handler": "waiting_room", in the
// order they appear, read as tokens so that the order is the file's.
func findRooms(config []byte) ([]json.RawMessage, error) {
	type frame struct {
		start         int64
		object, atKey bool
		key           string
		room          bool
	}
	dec := json.NewDecoder(bytes.NewReader(config))
	var stack []frame
	var rooms []json.RawMessage
	for {
		tok, err := dec.Token()
		if err == io.EOF && len(stack) > 0 {
			err = io.ErrUnexpectedEOF
		}
		if err == io.EOF {
			return rooms, nil
		}
		if err != nil {
			return nil, err
		}
		var top *frame
		if len(stack) > 0 {
			top = &stack[len(stack)-1]
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			if f := stack[len(stack)-1]; f.room {
				rooms = append(rooms, json.RawMessage(config[f.start:dec.InputOffset()]))
			}
			stack = stack[:len(stack)-1]
			continue
		}
		if top != nil && top.object {
			if top.atKey {
				top.key, top.atKey = tok.(string), false
				continue
			}
			top.room = top.room || top.key == "handler" && tok == "waiting_room"
			top.atKey = true
		}
		if d, ok := tok.(json.Delim); ok {
			stack = append(stack, frame{start: dec.InputOffset() - 1, object: d == '{', atKey: true})
		}
	}
}
