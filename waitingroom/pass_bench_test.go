package waitingroom

import (
	"net/http"
	"testing"
	"time"
)

// An admitted visitor who came in with a pass: the same hot path as
// BenchmarkChainAdmitted (a cookie check), with the pass bound into the cookie. Run
// the two together; their ratio is what docs/passes.md reports.
func BenchmarkChainAdmittedPass(b *testing.B) {
	tr := newBenchRoom(b, 1)
	_, cookie, seen := tr.passVisit("http://shop.example/tickets", tr.mint(1), "")
	if tok, ok := tr.h.room.Keys().Open(cookie, time.Now()); seen == nil || !ok || !tok.Pass {
		b.Fatal("the pass holder was not admitted with the pass in the cookie")
	}
	next := okHandler()
	benchRequests(b, func(w http.ResponseWriter, r *http.Request) { _ = tr.h.ServeHTTP(w, r, next) }, tr.h.Cookie.Name+"="+cookie)
}
