package page

import (
	"bytes"
	"html/template"
	"sync"
	"sync/atomic"

	"github.com/caddy-waitingroom/caddy-waitingroom/assets"
)

// Page is a waiting page template that renders in microseconds. Every queued
// visitor gets a page, and executing html/template costs about a hundred times
// what the rest of answering them does, so a Page renders each kind of page once,
// as a frame with holes for the numbers and the nonce (frame.go), and fills the
// holes per request. A template that does more with those fields than print them
// (say {{if lt .Position 10}}) is executed for every visitor instead; Unspliced
// says why. Either way Render writes exactly what executing the template writes.
type Page struct {
	layout *layout

	mu     sync.Mutex // held while a frame is built
	frames atomic.Pointer[map[frameKey]*frame]
}

// layout is a parsed template, and the probe and walk verdict that go with it.
type layout struct {
	tmpl      *template.Template
	probe     *probe // nil when the page cannot be spliced
	unspliced error
}

// frameKey is everything but the volatile fields a page depends on. T is not in it:
// a frame is built and used only with the catalog's T for lang. A field added to
// Data belongs here or among the volatile fields (TestEveryPageFieldIsKeyedOrSpliced).
type frameKey struct {
	room, lang, state, mode     string
	message                     string // changes rarely (an operator's PATCH)
	reason, handoff, drawURL    string
	lottery, etaKnown, returned bool
	missed                      bool
	capacity, refresh, awayTTL  int
}

// maxFrames bounds a page's cache. A room needs about eight frames per language
// (queued with and without an ETA, each also for a waiter who just came back,
// pre-queue and its returner, rejected, unavailable), and only the
// languages Negotiate returns are keys, so a client's Accept-Language cannot grow
// it. What can grow it over time is the operator changing the capacity or mode;
// then the cache starts over.
const maxFrames = 128

// embeddedText is the embedded page's source, which each EmbeddedPage parses again for
// its own probe: one room's frame builds never wait for another's.
var embeddedText = mustRead("waiting.html")

// EmbeddedPage returns a new Page of the embedded waiting page, with its own cache.
func EmbeddedPage() *Page {
	return &Page{layout: newLayout(defaultTemplate, "waiting.html", embeddedText)}
}

// NewPage parses an operator's own waiting page (see NewTemplate).
func NewPage(name, text string) (*Page, error) {
	tmpl, err := NewTemplate(name, text)
	if err != nil {
		return nil, err
	}
	return &Page{layout: newLayout(tmpl, name, text)}, nil
}

func newLayout(tmpl *template.Template, name, text string) *layout {
	l := &layout{tmpl: tmpl}
	p, err := newProbe(name, text)
	if err == nil {
		err = checkSplice(p.tmpl)
	}
	if err != nil {
		l.unspliced = err
		return l
	}
	l.probe = p
	return l
}

func mustRead(name string) string {
	b, err := assets.Files.ReadFile(name)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// Unspliced says why every render of this page executes the template, or nil when
// renders are spliced.
func (p *Page) Unspliced() error { return p.layout.unspliced }

// Template returns the page's template.
func (p *Page) Template() *template.Template { return p.layout.tmpl }

// Render appends the page for data to dst. When data.T is nil it is the catalog's
// T for data.Lang, and only such renders are spliced (a caller's own T could say
// anything). On an error dst is returned as it came.
func (p *Page) Render(dst []byte, data *Data) ([]byte, error) {
	if f := p.frameFor(data); f != nil {
		return f.appendTo(dst, data), nil
	}
	return p.layout.execute(dst, data)
}

// RenderGzip appends the page for data to dst as a gzip member, which inflates to what
// Render writes, and reports whether it did. Only spliced renders are compressed, from
// bytes compressed once (gzip.go); for any other it returns dst as it came and false,
// and the page goes out as Render writes it: compressing it per request would cost
// more than the bytes it saves.
func (p *Page) RenderGzip(dst []byte, data *Data) ([]byte, bool) {
	f := p.frameFor(data)
	if f == nil || f.gz == nil {
		return dst, false
	}
	return f.appendGzip(dst, data)
}

// frameFor returns the frame that renders data, building it on first use, or nil
// when data must go through the template.
func (p *Page) frameFor(data *Data) *frame {
	if p.layout.probe == nil || data.T != nil || !Supported(data.Lang) || !fits(data) {
		return nil
	}
	key := frameKey{data.Room, data.Lang, data.State, data.Mode, data.Message, data.Reason, data.Handoff, data.DrawURL, data.Lottery, data.ETAKnown, data.Returned,
		data.Missed, data.Capacity, data.RefreshSeconds, data.AwayTTLSeconds}
	if m := p.frames.Load(); m != nil {
		if f, ok := (*m)[key]; ok {
			return f.orNil()
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	old := p.frames.Load()
	if old != nil {
		if f, ok := (*old)[key]; ok {
			return f.orNil()
		}
	}
	f := p.layout.buildFrame(data)
	// Copy on write: readers never lock, and frames are built rarely.
	m := make(map[frameKey]*frame, maxFrames)
	if old != nil && len(*old) < maxFrames {
		for k, v := range *old {
			m[k] = v
		}
	}
	m[key] = f
	p.frames.Store(&m)
	return f.orNil()
}

func (f *frame) orNil() *frame {
	if f.direct {
		return nil
	}
	return f
}

// execute renders data through the template.
func (l *layout) execute(dst []byte, data *Data) ([]byte, error) {
	d := *data
	if d.T == nil {
		d.T = sharedMessages(d.Lang)
	}
	buf := bytes.NewBuffer(dst)
	if err := l.tmpl.Execute(buf, d); err != nil {
		return dst, err
	}
	return buf.Bytes(), nil
}
