package push

import (
	"os"
	"strings"
	"testing"
)

// checkedWebsocket is the coder/websocket version that the push path was checked
// against: our frames share each connection with the library's (it reads the client,
// answers pings and writes the close through wireWriter), and smallBuffers relies on
// how its handshake hijacks the connection and keeps what was already read.
const checkedWebsocket = "v1.8.15"

// Another version of coder/websocket may frame, buffer or hijack differently, so an
// upgrade must come with a fresh look at this package (its frame and socket tests, and
// the load harness's ws section), and then a change of checkedWebsocket.
func TestWebsocketLibraryIsTheVersionChecked(t *testing.T) {
	mod, err := os.ReadFile("../../go.mod") // the plugin's, from this package's folder
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(mod)) {
		fields := strings.Fields(line)
		if len(fields) >= 2 && fields[0] == "github.com/coder/websocket" {
			if fields[1] != checkedWebsocket {
				t.Fatalf("go.mod requires coder/websocket %s; the push path was checked against %s (see checkedWebsocket)", fields[1], checkedWebsocket)
			}
			return
		}
	}
	t.Fatal("go.mod does not require coder/websocket")
}
