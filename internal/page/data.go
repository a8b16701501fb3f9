// Package page is what a waiter is told: the view (the JSON answer, the WebSocket
// message, the page's numbers), the waiting page rendered from assets/waiting.html or
// an operator's template, its translations and the choice among them, and the page's
// Content-Security-Policy nonce.
//
// A page is not rendered by executing html/template per visitor: Page renders each
// kind of page once, as a frame with holes for the numbers and the nonce (page.go,
// frame.go, probe.go, volatile.go), and splices DEFLATE blocks compressed once into
// each visitor's gzip stream (gzip.go, crc.go), because executing the template costs
// more than the rest of the request: in one sitting of wrk against the queued page
// (every request a new visitor, 2 cores), the page runs at 0.81x bare Caddy this way
// and at 0.14-0.22x with html/template's Execute and a pooled per-request gzip
// (compress/gzip, or klauspost/compress at BestSpeed). TestEmbeddedPageIsSplicedExactly,
// FuzzPageIsTheTemplate and FuzzGzipPageIsThePage hold every render to what executing
// the template writes.
package page

import (
	"fmt"
	"html/template"
	"io"
	"strconv"
	"strings"

	"github.com/caddy-waitingroom/caddy-waitingroom/assets"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// Data is what a waiting page template is rendered with.
type Data struct {
	Room            string            // room name
	Lang            string            // chosen language tag, one of Languages()
	State           string            // "queued" (normal), "prequeue" (queued before a scheduled event starts), "rejected" (reject mode: sold out, come back later), "unavailable" (the store is down and the room fails closed) or "moved" (the place moved to another device: nothing to do here)
	Mode            string            // the room's mode now: fifo, random, passthrough, reject, queue_all
	StartsInSeconds int               // "prequeue": seconds until the event starts
	Lottery         bool              // "prequeue": the order is drawn at random at the start, so arriving early gives no advantage
	Position        int               // 1-based place in line (queued)
	Waiting         int               // people waiting in total
	Active          int               // visitors currently admitted
	Capacity        int               // visitors admitted at once
	ETASeconds      int               // estimated wait, valid only when ETAKnown
	ETAKnown        bool              // false until there is data: show "estimating…"
	Progress        int               // 0..100 for the progress bar
	RefreshSeconds  int               // polling period and <meta refresh> period
	Message         string            // the operator's message to the line, plain text ("" for none); print it as text
	AwayTTLSeconds  int               // how long the place is kept for a waiter who goes quiet (a closed tab, a phone asleep); 0 when it is kept only while the page is open
	Returned        bool              // this answer found the waiter away and brought them back to the place they kept
	Missed          bool              // with Returned: their turn came while they were away (they did not come in within arrive_ttl), and they go in first
	Reason          string            // why a visitor let in before is in line again: "session_max" (their time ran out), else ""
	Handoff         string            // "invalid": the hand-off code the visitor opened did not hold, and they are an ordinary new visitor; "refused": the link came from another site, and they keep their own place; else ""
	DrawURL         string            // the public page of the waiter's draw, or of the room's (docs/fairness.md): "Check the draw"; "" when the room publishes none
	Nonce           string            // CSP nonce for the inline <script> and <style>
	T               map[string]string // translated strings for Lang (from Messages)
}

// defaultTemplate is parsed at init so a broken embedded page stops the
// program at start, not on the first visitor of a sale.
var defaultTemplate = template.Must(template.New("waiting.html").Funcs(Funcs()).ParseFS(assets.Files, "waiting.html"))

// DefaultTemplate returns the embedded waiting page. It is shared: execute it
// (safe from many goroutines), do not modify it.
func DefaultTemplate() *template.Template {
	return defaultTemplate
}

// NewTemplate parses an operator's own waiting page with the same Funcs as the
// default one. It also renders the page once with sample data, so a template
// that parses but cannot execute (a misspelt field, a wrong argument count) is
// reported when the config loads instead of failing every visitor.
func NewTemplate(name, text string) (*template.Template, error) {
	tmpl, err := template.New(name).Funcs(Funcs()).Parse(text)
	if err != nil {
		return nil, fmt.Errorf("parsing waiting page template: %w", err)
	}
	// Rendering a clone keeps tmpl unexecuted, so callers may still Clone it.
	trial, err := tmpl.Clone()
	if err != nil {
		return nil, fmt.Errorf("parsing waiting page template: %w", err)
	}
	if err := trial.Execute(io.Discard, samplePage()); err != nil {
		return nil, fmt.Errorf("rendering waiting page template with sample data: %w", err)
	}
	return tmpl, nil
}

func samplePage() Data {
	return Data{
		Room: "sample", Lang: defaultLang, State: "queued",
		Position: 12, Waiting: 40, Active: 2, Capacity: 2,
		ETASeconds: 240, ETAKnown: true, Progress: 73, RefreshSeconds: 5,
		AwayTTLSeconds: 600, Nonce: "sample", T: Messages(defaultLang),
	}
}

// Funcs returns the helpers a waiting page template may call:
//
//	eta T seconds        "about 4 minutes" in T's language; never a precise count
//	number T n           n with T's digit grouping ("12,345")
//	around text mark     text split at mark into [before, after], for "You are number {n}"
//	duration T seconds   "10 minutes" in T's language: a span the visitor can count
//	                     on, rounded down, never up
//	percent n            n clamped to 0..100
//	atLeast min n        the larger of min and n
//	clientState .        the page's facts as the JSON the script reads (see waiting.html)
func Funcs() template.FuncMap {
	return template.FuncMap{
		"eta":         formatETA,
		"duration":    formatDuration,
		"number":      formatNumber,
		"around":      around,
		"percent":     percent,
		"atLeast":     func(lo, n int) int { return max(lo, n) },
		"clientState": clientState,
	}
}

func percent(n int) int { return min(max(n, 0), 100) }

// formatETA tells an estimate in words, rounded as queue.Tell rounds it.
func formatETA(t map[string]string, seconds int) string {
	e := etaTextsOf(t)
	return string(e.append(nil, seconds))
}

// etaTexts are the texts an estimate is told with, looked up once so that a
// cached page (see Page) can tell a wait without touching the map.
type etaTexts struct {
	underMinute, minutesOne, minutesOther, hoursOther, separator string
}

func etaTextsOf(t map[string]string) etaTexts {
	return etaTexts{
		underMinute:  t["eta_under_minute"],
		minutesOne:   t["eta_minutes_one"],
		minutesOther: t["eta_minutes_other"],
		hoursOther:   t["eta_hours_other"],
		separator:    t["thousands_separator"],
	}
}

// append is formatETA: the one implementation both the template function and
// the cached page use, so the two cannot drift apart. The rounding is queue.Tell's.
func (e *etaTexts) append(dst []byte, seconds int) []byte {
	w := queue.Tell(seconds)
	switch {
	case w.Hours > 0:
		return e.fill(dst, e.hoursOther, w.Hours)
	case w.Minutes == 0:
		return append(dst, e.underMinute...)
	case w.Minutes == 1:
		return append(dst, e.minutesOne...)
	default:
		return e.fill(dst, e.minutesOther, w.Minutes)
	}
}

// fill writes text with its first "{n}" replaced by n (as strings.Replace
// would, once); a text without the mark is written as it is.
func (e *etaTexts) fill(dst []byte, text string, n int) []byte {
	before, after, ok := strings.Cut(text, "{n}")
	if !ok {
		return append(dst, text...)
	}
	dst = append(dst, before...)
	dst = appendNumber(dst, e.separator, n)
	return append(dst, after...)
}

// formatDuration tells a span of time the visitor can count on (how long a place is
// kept), so it rounds down: in seconds below two minutes, in minutes below two hours,
// then in hours. From two seconds up the number is never 1, so each unit needs only
// its plural form; the embedded page promises no span shorter than that.
func formatDuration(t map[string]string, seconds int) string {
	key, n := "duration_seconds", seconds
	switch {
	case seconds >= 2*3600:
		key, n = "duration_hours", seconds/3600
	case seconds >= 2*60:
		key, n = "duration_minutes", seconds/60
	}
	e := etaTextsOf(t)
	return string(e.fill(nil, t[key], n))
}

// formatNumber groups digits by thousands with the language's separator.
func formatNumber(t map[string]string, n int) string {
	return string(appendNumber(nil, t["thousands_separator"], n))
}

// appendNumber is formatNumber without the map or the string: the one
// implementation the template function and the cached page share.
func appendNumber(dst []byte, sep string, n int) []byte {
	var buf [20]byte
	digits := strconv.AppendInt(buf[:0], int64(n), 10)
	if n < 0 {
		dst = append(dst, '-')
		digits = digits[1:]
	}
	for i, d := range digits {
		if i > 0 && (len(digits)-i)%3 == 0 {
			dst = append(dst, sep...)
		}
		dst = append(dst, d)
	}
	return dst
}

// around splits a translated sentence at its placeholder, so the template can
// wrap the number in its own element while translators keep whole sentences.
func around(text, mark string) []string {
	before, after, _ := strings.Cut(text, mark)
	return []string{before, after}
}

// clientKeys are the texts the page's script needs after load; the rest of T
// is only rendered on the server.
var clientKeys = []string{
	"thousands_separator", "eta_estimating", "eta_under_minute", "eta_minutes_one",
	"eta_minutes_other", "eta_hours_other", "announce_position", "admitted",
	"back_kept", "back_missed", "back_turn", "turn_title", "notify_on", "notify_sound",
	"notify_asking",
}

// clientState is the page's starting point in the shape of the server's
// "position" messages, plus the texts the script formats with. The template
// puts it in a <script type="application/json">, where html/template encodes
// it as JSON with <, > and & escaped.
func clientState(page any) (map[string]any, error) {
	var p Data
	switch v := page.(type) {
	case Data:
		p = v
	case *Data:
		p = *v
	default:
		return nil, fmt.Errorf("clientState: want Data, got %T", page)
	}
	var eta any // JSON null until the estimate is known, as on the wire
	if p.ETAKnown {
		eta = p.ETASeconds
	}
	t := make(map[string]string, len(clientKeys))
	for _, k := range clientKeys {
		t[k] = p.T[k]
	}
	state := map[string]any{
		"room":            p.Room,
		"status":          p.State,
		"position":        p.Position,
		"waiting":         p.Waiting,
		"active":          p.Active,
		"capacity":        p.Capacity,
		"eta_seconds":     eta,
		"refresh_seconds": max(p.RefreshSeconds, 1),
		"t":               t,
	}
	if p.State == "prequeue" {
		state["starts_in_seconds"] = p.StartsInSeconds
	}
	if p.Message != "" {
		state["message"] = p.Message
	}
	// As on the wire: absent when zero or false.
	if p.AwayTTLSeconds > 0 {
		state["away_ttl_seconds"] = p.AwayTTLSeconds
	}
	if p.Returned {
		state["returned"] = true
	}
	if p.Missed {
		state["missed"] = true
	}
	return state, nil
}
