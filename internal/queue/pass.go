package queue

import "time"

// A PassUse is one presentation of a valid pass (see Store.JoinPass): the pass's id
// names its use counter, Uses is how many joins it allows in all, and the counter is
// kept until Expires (after that the pass itself is refused).
type PassUse struct {
	ID      string
	Uses    int
	Expires time.Time
}
