package push

import (
	"bufio"
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// A TLS 1.3 client may ask for a KeyUpdate at any time, and crypto/tls answers it from
// the read path, holding the connection's write lock, with a write that blocks while
// the client reads nothing. A hostile client that asks for KeyUpdates and stops
// reading parks that write. Whatever it does, the waiters beside it go on hearing the
// room, and its own socket is let go of: no client's behaviour holds the hub.
func TestTLSClientStallingKeyUpdatesHoldsOnlyItsOwnSocket(t *testing.T) {
	tr := newTestRoom(t, 1)
	tr.join() // the head, admitted: the waiters below queue behind it
	honest, hostile := tr.join(), tr.join()

	ctx, c := dialTLSWaiter(t, tr, honest)
	var heard atomic.Int64
	go func() {
		for {
			if _, _, err := c.Read(ctx); err != nil {
				return
			}
			heard.Add(1)
		}
	}()

	h := dialStallingTLSWaiter(ctx, t, tr, hostile)
	go h.askKeyUpdates()
	waitUntil(t, "the server's answer to a KeyUpdate blocked on the hostile client's full buffers", func() bool {
		return goroutinesWith("[IO wait", "crypto/tls.(*Conn).handleKeyUpdate") > 0
	})

	// The room's clock moves on: every waiter is owed a resend, the hostile one too,
	// and each time the honest one must hear it. Meanwhile the hub's goroutine never
	// writes through a TLS connection, whose lock the hostile client can have held.
	const resends = 5
	for k := range resends {
		before := heard.Load()
		tr.advance(maxSilence)
		for heard.Load() == before {
			if goroutinesWith("push.(*Hub).Run", "crypto/tls.(*Conn).Write") > 0 {
				t.Fatal("the hub's goroutine writes through a TLS connection: one client can hold it")
			}
			select {
			case <-ctx.Done():
				t.Fatalf("after a TLS client stalled an answer to its KeyUpdate, the honest waiter heard %d of %d resends: the hub is held", k, resends)
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	waitUntil(t, "the hostile client's socket let go of", func() bool {
		tr.hub.mu.Lock()
		defer tr.hub.mu.Unlock()
		return tr.hub.waiters[visitorID(t, hostile)] == nil // its last socket gone
	})
	waitUntil(t, "no answer to a KeyUpdate left blocked", func() bool {
		return goroutinesWith("[IO wait", "crypto/tls.(*Conn).handleKeyUpdate") == 0
	})
}

// Two records in one segment: crypto/tls reads both, the library's read takes the
// message of the first, and the second waits in crypto/tls's buffer, where the
// descriptor's readiness cannot see it. The idle reader must read it without waiting
// for more (here it is a leave, which gives up the place).
func TestSecondRecordOfATLSSegmentIsRead(t *testing.T) {
	tr := newTestRoom(t, 1)
	tr.join()
	cookie := tr.join()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h := dialStallingTLSWaiter(ctx, t, tr, cookie)
	awaitParked(t, tr, 1, "after the upgrade")
	segment := append(h.record(23, maskedText(`{"type":"note"}`)), h.record(23, maskedText(`{"type":"leave"}`))...)
	if _, err := h.conn.Write(segment); err != nil { // one write: both records arrive together
		t.Fatal(err)
	}
	awaitLeft(t, tr, cookie, "the second record of the segment was not read")
}

// advance moves the room's clock on by d.
func (tr *testRoom) advance(d time.Duration) {
	tr.mu.Lock()
	tr.now = tr.now.Add(d)
	tr.mu.Unlock()
}

// goroutinesWith counts the goroutines whose state or stack shows every one of parts:
// ("[IO wait", "crypto/tls.(*Conn).handleKeyUpdate") is crypto/tls's answer to a
// KeyUpdate parked on a full connection.
func goroutinesWith(parts ...string) int {
	count := 0
	for g := range strings.SplitSeq(allStacks(), "\n\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(g, p)
		}
		if all {
			count++
		}
	}
	return count
}

// stallingClient is a hostile TLS 1.3 waiter: after its WebSocket upgrade it writes
// records of its own onto the TCP connection, sealed with the client's application
// traffic secret (from the key log), and never reads again.
type stallingClient struct {
	t    *testing.T
	conn net.Conn // the TCP connection under the client's TLS

	newHash func() hash.Hash
	keyLen  int
	secret  []byte
	aead    cipher.AEAD
	iv      []byte
	seq     uint64
}

// dialStallingTLSWaiter opens the waiting WebSocket of the waiter whose cookie is
// cookie as a stalling client, on a server of tr whose connections have small send
// buffers (so that a few hundred KeyUpdate answers fill them), and reads nothing past
// the upgrade's answer.
func dialStallingTLSWaiter(ctx context.Context, t *testing.T, tr *testRoom, cookie string) *stallingClient {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(tr.serve))
	srv.Listener = smallSendBuffers{srv.Listener}
	srv.StartTLS()
	t.Cleanup(srv.Close)

	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		})
		if err != nil {
			return err
		}
		return serr
	}}
	conn, err := d.DialContext(ctx, "tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	var keyLog bytes.Buffer
	tc := tls.Client(conn, &tls.Config{
		InsecureSkipVerify: true, // the test server's own certificate
		MinVersion:         tls.VersionTLS13,
		KeyLogWriter:       &keyLog,
	})
	if err := tc.HandshakeContext(ctx); err != nil {
		t.Fatal(err)
	}
	host := srv.Listener.Addr().String()
	request := fmt.Sprintf("GET / HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: %s\r\n"+
		"Cookie: %s=%s\r\n\r\n", host, Subprotocol, cookieName, cookie)
	if _, err := tc.Write([]byte(request)); err != nil { // one record: the first under the traffic secret
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(tc), nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", resp, err)
	}

	h := &stallingClient{t: t, conn: conn, seq: 1}
	switch suite := tc.ConnectionState().CipherSuite; suite {
	case tls.TLS_AES_128_GCM_SHA256:
		h.newHash, h.keyLen = sha256.New, 16
	case tls.TLS_AES_256_GCM_SHA384:
		h.newHash, h.keyLen = sha512.New384, 32
	default:
		t.Fatalf("the test seals records with AES-GCM only; the server chose %s", tls.CipherSuiteName(suite))
	}
	for line := range strings.SplitSeq(keyLog.String(), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "CLIENT_TRAFFIC_SECRET_0" {
			if h.secret, err = hex.DecodeString(f[2]); err != nil {
				t.Fatal(err)
			}
		}
	}
	if h.secret == nil {
		t.Fatal("the key log has no client traffic secret")
	}
	h.keys()
	return h
}

// keys sets the AEAD and IV of the current traffic secret (RFC 8446 7.3).
func (h *stallingClient) keys() {
	key := h.expandLabel(h.secret, "key", h.keyLen)
	h.iv = h.expandLabel(h.secret, "iv", 12)
	block, err := aes.NewCipher(key)
	if err != nil {
		h.t.Error(err)
		return
	}
	if h.aead, err = cipher.NewGCM(block); err != nil {
		h.t.Error(err)
	}
}

// expandLabel is TLS 1.3's HKDF-Expand-Label with an empty context.
func (h *stallingClient) expandLabel(secret []byte, label string, n int) []byte {
	full := "tls13 " + label
	info := append(binary.BigEndian.AppendUint16(nil, uint16(n)), byte(len(full)))
	info = append(append(info, full...), 0)
	out, err := hkdf.Expand(h.newHash, secret, string(info), n)
	if err != nil {
		h.t.Error(err)
	}
	return out
}

// seal writes one record of content type typ carrying data.
func (h *stallingClient) seal(typ byte, data []byte) error {
	_, err := h.conn.Write(h.record(typ, data))
	return err
}

// record is the next record of content type typ carrying data, sealed.
func (h *stallingClient) record(typ byte, data []byte) []byte {
	inner := append(bytes.Clone(data), typ)
	header := []byte{23, 3, 3, 0, 0} // application_data, TLS 1.2 on the wire, as TLS 1.3 records are
	binary.BigEndian.PutUint16(header[3:], uint16(len(inner)+h.aead.Overhead()))
	nonce := bytes.Clone(h.iv)
	for i := range 8 {
		nonce[len(nonce)-1-i] ^= byte(h.seq >> (8 * i))
	}
	h.seq++
	return h.aead.Seal(header, nonce, inner, header)
}

// askKeyUpdates asks for KeyUpdates until the connection is closed, moving its own
// keys on after each; between them, a short text message, so that crypto/tls does
// not count the KeyUpdates as records that make no progress and end the connection.
func (h *stallingClient) askKeyUpdates() {
	keyUpdate := []byte{24, 0, 0, 1, 1} // KeyUpdate, update_requested
	for k := 0; ; k++ {
		if k%8 == 7 {
			if h.seal(23, maskedText(`{"type":"hello"}`)) != nil {
				return
			}
			continue
		}
		if h.seal(22, keyUpdate) != nil {
			return
		}
		h.secret = h.expandLabel(h.secret, "traffic upd", len(h.secret))
		h.keys()
		h.seq = 0
	}
}

// smallSendBuffers is a listener whose connections have small kernel send buffers.
type smallSendBuffers struct{ net.Listener }

func (l smallSendBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tcp, ok := c.(*net.TCPConn); ok {
		_ = tcp.SetWriteBuffer(4096)
	}
	return c, err
}
