package push

import (
	"encoding/json"
)

// The operator's message to the line goes out in a frame of its own,
// {"type":"message","text":"..."}: when it changes (to every socket of the hub, within
// the tick the room learns of it), and to each socket as it connects, so a reconnect
// hears it again. Position messages never carry it: it would be up to 500 characters
// more in every push to every waiter, for a text that changes a few times a day.

// messageFrame is text's message, framed. encoding/json does the escaping (< > & too):
// a message is built once per change, not once per waiter.
func messageFrame(text string) []byte {
	body, _ := json.Marshal(struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}{"message", text})
	return endTextFrame(append([]byte{0, 0, 0, 0}, body...), 0)
}

// tellChanged sends the room's message to every socket when it differs from the one
// last sent. Hub goroutine only.
func (hb *Hub) tellChanged(told *string) {
	text := hb.room.Message()
	if text == *told {
		return
	}
	*told = text
	frame := messageFrame(text)
	hb.mu.Lock()
	defer hb.mu.Unlock()
	for _, ws := range hb.waiters {
		for _, s := range ws.sockets {
			if s.message != text {
				s.message = text
				s.tell(frame)
			}
		}
	}
}

// greet gives a socket that just connected the message to the line, if there is one.
// Under the hub's lock, like tellChanged, so a change that lands as the socket
// connects reaches it once, not from both.
func (hb *Hub) greet(s *socket) {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	if text := hb.room.Message(); text != s.message {
		s.message = text
		s.tell(messageFrame(text))
	}
}

// tell sends s the message frame: at once when the wire is free, else through the
// socket's writer, which sends the latest message before the latest position.
func (s *socket) tell(frame []byte) { s.deliver(frame, &s.note) }
