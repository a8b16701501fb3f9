// Package admin serves the waiting rooms on Caddy's admin endpoint (module
// admin.api.waiting_room): see, steer and graph every room of this process without
// editing the config. It holds no state; it reads rooms through waitingroom's registry.
package admin

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/caddyserver/caddy/v2"

	"github.com/caddy-waitingroom/caddy-waitingroom/waitingroom"
)

func init() {
	caddy.RegisterModule(Admin{})
}

// Admin is the waiting room admin API. Caddy loads it on its admin endpoint
// (localhost:2019 by default), so it inherits the admin listener's access control:
// local only unless configured otherwise; remote admin can grant it by path prefix
// "/waiting_room/".
type Admin struct{}

// CaddyModule returns the Caddy module information.
func (Admin) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "admin.api.waiting_room",
		New: func() caddy.Module { return new(Admin) },
	}
}

// Routes returns the admin routes.
func (a *Admin) Routes() []caddy.AdminRoute {
	return []caddy.AdminRoute{
		{Pattern: "/waiting_room", Handler: caddy.AdminHandlerFunc(a.serve)},
		{Pattern: "/waiting_room/", Handler: caddy.AdminHandlerFunc(a.serve)},
	}
}

// maxBody bounds request bodies; the largest valid one is a few dozen bytes.
const maxBody = 64 << 10

// serve routes /waiting_room/[<name>[/admit|/reset|/preview|/visitors/<id>]] and the
// dashboard.
func (a *Admin) serve(w http.ResponseWriter, r *http.Request) error {
	rest := strings.Trim(strings.TrimPrefix(r.URL.Path, "/waiting_room"), "/")
	parts := strings.Split(rest, "/")
	switch {
	case rest == "":
		return a.list(w, r)
	case rest == "dashboard":
		return serveDashboard(w, r)
	}
	room, ok := waitingroom.LookupRoom(parts[0])
	if !ok {
		return apiError(http.StatusNotFound, fmt.Errorf("no room named %q", parts[0]))
	}
	switch {
	case len(parts) == 1:
		return a.room(w, r, room)
	case len(parts) == 2 && parts[1] == "admit":
		return a.admit(w, r, room)
	case len(parts) == 2 && parts[1] == "reset":
		return a.reset(w, r, room)
	case len(parts) == 2 && parts[1] == "preview":
		return a.preview(w, r, room)
	case len(parts) == 3 && parts[1] == "visitors":
		return a.removeVisitor(w, r, room, parts[2])
	}
	return apiError(http.StatusNotFound, fmt.Errorf("no such resource: %s", r.URL.Path))
}

func (a *Admin) list(w http.ResponseWriter, r *http.Request) error {
	if err := allow(r, http.MethodGet); err != nil {
		return err
	}
	infos := []waitingroom.RoomInfo{}
	for _, room := range waitingroom.Rooms() {
		info, err := room.Info(r.Context())
		if err != nil {
			return apiError(http.StatusServiceUnavailable, fmt.Errorf("room %q: %w", room.Name(), err))
		}
		infos = append(infos, info)
	}
	return writeJSON(w, infos)
}

func (a *Admin) room(w http.ResponseWriter, r *http.Request, room *waitingroom.Room) error {
	switch r.Method {
	case http.MethodGet:
		info, err := room.Info(r.Context())
		if err != nil {
			return storeError(err)
		}
		return writeJSON(w, info)
	case http.MethodPatch:
		body, err := readBody(r)
		if err != nil {
			return err
		}
		info, err := room.Patch(r.Context(), body)
		if err != nil {
			return storeError(err)
		}
		return writeJSON(w, info)
	}
	return methodNotAllowed(r, http.MethodGet, http.MethodPatch)
}

func (a *Admin) admit(w http.ResponseWriter, r *http.Request, room *waitingroom.Room) error {
	if err := allow(r, http.MethodPost); err != nil {
		return err
	}
	var req struct {
		Count *int `json:"count"`
	}
	if err := decodeStrict(r, &req); err != nil {
		return err
	}
	if req.Count == nil {
		return apiError(http.StatusBadRequest, errors.New(`want {"count": n}`))
	}
	n, err := room.Admit(r.Context(), *req.Count)
	if err != nil {
		return storeError(err)
	}
	return writeJSON(w, map[string]int{"admitted": n})
}

func (a *Admin) reset(w http.ResponseWriter, r *http.Request, room *waitingroom.Room) error {
	if err := allow(r, http.MethodPost); err != nil {
		return err
	}
	if err := room.Reset(r.Context()); err != nil {
		return storeError(err)
	}
	return writeJSON(w, map[string]bool{"reset": true})
}

// preview renders the room's waiting page with sample values:
// GET /waiting_room/<name>/preview?state=queued|prequeue|rejected|unavailable&position=12&lang=ko
func (a *Admin) preview(w http.ResponseWriter, r *http.Request, room *waitingroom.Room) error {
	if err := allow(r, http.MethodGet); err != nil {
		return err
	}
	q := r.URL.Query()
	state := q.Get("state")
	if state == "" {
		state = "queued"
	}
	position := 12
	if s := q.Get("position"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			return apiError(http.StatusBadRequest, fmt.Errorf("position must be a whole number, got %q", s))
		}
		position = n
	}
	lang := q.Get("lang")
	if lang == "" {
		lang = r.Header.Get("Accept-Language")
	}
	page, nonce, err := room.Preview(state, position, lang)
	if err != nil {
		return storeError(err)
	}
	waitingroom.PageHeaders(w.Header(), nonce)
	w.Header().Set("Cache-Control", "no-store")
	_, err = w.Write(page)
	return err
}

func (a *Admin) removeVisitor(w http.ResponseWriter, r *http.Request, room *waitingroom.Room, rawID string) error {
	if err := allow(r, http.MethodDelete); err != nil {
		return err
	}
	id, err := waitingroom.ParseVisitorID(rawID)
	if err != nil {
		return apiError(http.StatusBadRequest, err)
	}
	if err := room.RemoveVisitor(r.Context(), id); err != nil {
		if errors.Is(err, waitingroom.ErrNoVisitor) {
			return apiError(http.StatusNotFound, err)
		}
		return storeError(err)
	}
	return writeJSON(w, map[string]bool{"removed": true})
}

func allow(r *http.Request, method string) error {
	if r.Method != method {
		return methodNotAllowed(r, method)
	}
	return nil
}

func methodNotAllowed(r *http.Request, allowed ...string) error {
	return apiError(http.StatusMethodNotAllowed,
		fmt.Errorf("method %s not allowed here; use %s", r.Method, strings.Join(allowed, " or ")))
}

func readBody(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return nil, apiError(http.StatusBadRequest, fmt.Errorf("reading body: %w", err))
	}
	if len(body) > maxBody {
		return nil, apiError(http.StatusRequestEntityTooLarge, errors.New("body too large"))
	}
	return body, nil
}

// decodeStrict reads one JSON object into v, rejecting unknown fields and trailing data.
func decodeStrict(r *http.Request, v any) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return apiError(http.StatusBadRequest, fmt.Errorf("malformed JSON: %w", err))
	}
	// Anything after the value, even a lone ] or } (which More does not see), is a
	// malformed body.
	if _, err := dec.Token(); err != io.EOF {
		return apiError(http.StatusBadRequest, errors.New("malformed JSON: more than one value"))
	}
	return nil
}

// storeError maps a room operation's error: the caller's mistakes are 400, the rest
// (a store that cannot be reached) 503.
func storeError(err error) error {
	var input *waitingroom.InputError
	if errors.As(err, &input) {
		return apiError(http.StatusBadRequest, err)
	}
	return apiError(http.StatusServiceUnavailable, err)
}

func apiError(code int, err error) error {
	return caddy.APIError{HTTPStatus: code, Err: err}
}

func writeJSON(w http.ResponseWriter, v any) error {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	return json.NewEncoder(w).Encode(v)
}

// Interface guards
var _ caddy.AdminRouter = (*Admin)(nil)
