package caddytest

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// A browser gets the waiting page gzipped, by its length, from a real Caddy: alone, and
// behind Caddy's own encode, which must leave a response already encoded alone rather
// than compress it twice. A client that names no coding gets the page as it is, and a
// HEAD gets the headers without the page.
func TestLiveWaitingPageGzip(t *testing.T) {
	for _, tc := range []struct{ name, site string }{
		{"alone", `	header Vary Origin
	waiting_room {
		name %s
		capacity 1
	}
	respond "upstream {path}"`},
		{"behind encode", `	route {
		encode zstd gzip
		waiting_room {
			name %s
			capacity 1
		}
		respond "upstream {path}"
	}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			startSite(t, fmt.Sprintf(tc.site, uniqueRoom(t)))
			if _, admitted := newVisitor(t).place("/"); !admitted {
				t.Fatal("the first visitor was queued in an empty room")
			}
			// A transport that leaves the bytes as they came, to see them as sent.
			raw := &http.Client{Transport: &http.Transport{DisableCompression: true}}
			defer raw.CloseIdleConnections()
			ask := func(method, encodings string) (*http.Response, []byte) {
				t.Helper()
				req, _ := http.NewRequest(method, liveBase+"/tickets", nil)
				req.Header.Set("Accept", "text/html,application/xhtml+xml,*/*;q=0.8")
				if encodings != "" {
					req.Header.Set("Accept-Encoding", encodings)
				}
				resp, err := raw.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				body, err := io.ReadAll(resp.Body)
				if err != nil {
					t.Fatal(err)
				}
				if resp.ContentLength != int64(len(body)) && method == http.MethodGet {
					t.Fatalf("%s with Accept-Encoding %q: Content-Length %d for %d bytes", method, encodings, resp.ContentLength, len(body))
				}
				var vary []string
				for _, v := range resp.Header.Values("Vary") {
					for f := range strings.SplitSeq(v, ",") {
						vary = append(vary, strings.TrimSpace(f))
					}
				}
				if n := strings.Count(strings.Join(vary, ","), "Accept-Encoding"); n != 1 {
					t.Fatalf("%s with Accept-Encoding %q: Vary %q names Accept-Encoding %d times", method, encodings, vary, n)
				}
				if tc.name == "alone" && vary[0] != "Origin" {
					t.Fatalf("the site's own Vary was replaced: %q", vary)
				}
				return resp, body
			}

			resp, body := ask(http.MethodGet, "gzip, deflate, br, zstd")
			if ce := resp.Header.Values("Content-Encoding"); len(ce) != 1 || ce[0] != "gzip" {
				t.Fatalf("a browser got Content-Encoding %q", ce)
			}
			zr, err := gzip.NewReader(bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			page, err := io.ReadAll(zr)
			if err != nil || !bytes.Contains(page, []byte(`id="wr-position"`)) {
				t.Fatalf("the gzip page inflates to %.200q, %v", page, err)
			}

			resp, body = ask(http.MethodGet, "")
			if ce := resp.Header.Get("Content-Encoding"); ce != "" || !bytes.Contains(body, []byte(`id="wr-position"`)) {
				t.Fatalf("without Accept-Encoding: Content-Encoding %q, page %.200q", ce, body)
			}

			resp, body = ask(http.MethodHead, "gzip, deflate, br, zstd")
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Encoding") != "gzip" || resp.ContentLength <= 0 || len(body) != 0 {
				t.Fatalf("HEAD: %d, Content-Encoding %q, Content-Length %d, %d bytes of body",
					resp.StatusCode, resp.Header.Get("Content-Encoding"), resp.ContentLength, len(body))
			}
		})
	}
}
