// Package admin serves the waiting rooms on Caddy's admin endpoint (module
// admin.api.waiting_room): see, steer and graph every room of this process without
// editing the config. It holds no state: it reaches each room through
// *room.Room, looked up by name for every request.
package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"strconv"
	"strings"

	"github.com/caddyserver/caddy/v2"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/room"
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

// Routes returns the admin routes: everything under /waiting_room, routed by an
// http.ServeMux of its own, so a room's name is one path segment whatever it holds
// (%2F and all). Errors go back to Caddy's admin handler, which answers them as JSON.
func (a *Admin) Routes() []caddy.AdminRoute {
	mux := http.NewServeMux()
	mux.Handle("GET /waiting_room/{$}", handle(a.list))
	mux.Handle("GET /waiting_room/dashboard", handle(serveDashboard))
	mux.Handle("GET /waiting_room/{room}", handle(withRoom(a.info)))
	mux.Handle("PATCH /waiting_room/{room}", handle(change(withRoom(a.patch))))
	mux.Handle("POST /waiting_room/{room}/admit", handle(change(withRoom(a.admit))))
	mux.Handle("POST /waiting_room/{room}/reset", handle(change(withRoom(a.reset))))
	mux.Handle("POST /waiting_room/{room}/passes", handle(change(withRoom(a.passes))))
	mux.Handle("GET /waiting_room/{room}/preview", handle(withRoom(a.preview)))
	mux.Handle("GET /waiting_room/{room}/history", handle(withRoom(a.history)))
	mux.Handle("DELETE /waiting_room/{room}/visitors/{id}", handle(change(withRoom(a.removeVisitor))))
	// The same paths with any other method: a JSON 405 naming the allowed ones, not
	// ServeMux's plain-text one.
	for pattern, allowed := range map[string][]string{
		"/waiting_room/{$}":                  {http.MethodGet},
		"/waiting_room/{room}/admit":         {http.MethodPost},
		"/waiting_room/{room}/reset":         {http.MethodPost},
		"/waiting_room/{room}/passes":        {http.MethodPost},
		"/waiting_room/{room}/preview":       {http.MethodGet},
		"/waiting_room/{room}/history":       {http.MethodGet},
		"/waiting_room/{room}/visitors/{id}": {http.MethodDelete},
	} {
		mux.Handle(pattern, handle(func(w http.ResponseWriter, r *http.Request) error {
			return methodNotAllowed(r, allowed...)
		}))
	}
	mux.Handle("/waiting_room/{room}", handle(func(w http.ResponseWriter, r *http.Request) error {
		if r.PathValue("room") == "dashboard" { // no room has the dashboard's name
			return methodNotAllowed(r, http.MethodGet)
		}
		return methodNotAllowed(r, http.MethodGet, http.MethodPatch)
	}))
	mux.Handle("/waiting_room/", handle(func(w http.ResponseWriter, r *http.Request) error {
		return apiError(http.StatusNotFound, fmt.Errorf("no such resource: %s", r.URL.Path))
	}))
	serve := caddy.AdminHandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		if r.URL.Path == "/waiting_room" {
			r.URL.Path = "/waiting_room/"
		}
		if p := r.URL.Path; !strings.HasPrefix(p, "/waiting_room/") || path.Clean(p) != strings.TrimSuffix(p, "/") {
			// ServeMux would redirect to the cleaned path, or answer in plain text: an
			// API names no such thing.
			return apiError(http.StatusNotFound, fmt.Errorf("no such resource: %s", p))
		}
		var res result
		mux.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), resultKey{}, &res)))
		return res.err
	})
	return []caddy.AdminRoute{
		{Pattern: "/waiting_room", Handler: serve},
		{Pattern: "/waiting_room/", Handler: serve},
	}
}

// maxBody bounds request bodies; the largest valid one is a few dozen bytes.
const maxBody = 64 << 10

// result carries a route's error from the mux back to Caddy's admin handler.
type result struct{ err error }

type resultKey struct{}

// handle adapts a route that returns an error to the mux.
func handle(route func(http.ResponseWriter, *http.Request) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Context().Value(resultKey{}).(*result).err = route(w, r)
	})
}

// withRoom looks up the room the path names, or answers 404.
func withRoom(route func(http.ResponseWriter, *http.Request, *room.Room) error) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		name := r.PathValue("room")
		rm, ok := waitingroom.LookupRoom(name)
		if !ok {
			return apiError(http.StatusNotFound, fmt.Errorf("no room named %q", name))
		}
		return roomError(route(w, r, rm))
	}
}

// roomError gives a room's error the status the admin API answers it with: the
// caller's mistakes are 400, a visitor that is not there 404, and the rest (a store
// that cannot be reached) 503. The router's own errors carry their status already.
func roomError(err error) error {
	var input room.InputError
	var apiErr caddy.APIError
	switch {
	case err == nil || errors.As(err, &apiErr):
		return err
	case errors.As(err, &input):
		return apiError(http.StatusBadRequest, err)
	case errors.Is(err, room.ErrNoVisitor):
		return apiError(http.StatusNotFound, err)
	}
	return apiError(http.StatusServiceUnavailable, err)
}

func (a *Admin) list(w http.ResponseWriter, r *http.Request) error {
	infos := []room.Info{}
	for _, rm := range waitingroom.Rooms() {
		info, err := rm.Info(r.Context())
		if err != nil {
			return apiError(http.StatusServiceUnavailable, fmt.Errorf("room %q: %w", rm.Name(), err))
		}
		infos = append(infos, info)
	}
	return writeJSON(w, infos)
}

func (a *Admin) info(w http.ResponseWriter, r *http.Request, rm *room.Room) error {
	info, err := rm.Info(r.Context())
	if err != nil {
		return err
	}
	return writeJSON(w, info)
}

func (a *Admin) patch(w http.ResponseWriter, r *http.Request, rm *room.Room) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	info, err := rm.Patch(r.Context(), body)
	if err != nil {
		return err
	}
	return writeJSON(w, info)
}

func (a *Admin) admit(w http.ResponseWriter, r *http.Request, rm *room.Room) error {
	var req struct {
		Count *int `json:"count"`
	}
	if err := decodeStrict(r, &req); err != nil {
		return err
	}
	if req.Count == nil {
		return apiError(http.StatusBadRequest, errors.New(`want {"count": n}`))
	}
	n, err := rm.Admit(r.Context(), *req.Count)
	if err != nil {
		return err
	}
	return writeJSON(w, map[string]int{"admitted": n})
}

func (a *Admin) reset(w http.ResponseWriter, r *http.Request, rm *room.Room) error {
	if err := rm.Reset(r.Context()); err != nil {
		return err
	}
	return writeJSON(w, map[string]bool{"reset": true})
}

// preview renders the room's waiting page with sample values:
// GET /waiting_room/<name>/preview?state=queued|prequeue|rejected|unavailable&position=12&lang=ko
func (a *Admin) preview(w http.ResponseWriter, r *http.Request, rm *room.Room) error {
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
	page, header, err := rm.Preview(state, position, lang)
	if err != nil {
		return err
	}
	for name, values := range header {
		w.Header()[name] = values
	}
	w.Header().Set("Cache-Control", "no-store")
	_, err = w.Write(page)
	return err
}

func (a *Admin) history(w http.ResponseWriter, r *http.Request, rm *room.Room) error {
	return writeJSON(w, rm.History())
}

func (a *Admin) removeVisitor(w http.ResponseWriter, r *http.Request, rm *room.Room) error {
	if err := rm.RemoveVisitor(r.Context(), r.PathValue("id")); err != nil {
		return err
	}
	return writeJSON(w, map[string]bool{"removed": true})
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
