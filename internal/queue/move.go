package queue

import "time"

// MovedKeep is how long Move's mark for the id that gave its place away is kept: as
// long as the place itself could live, a waiter's (Keep) or an admitted visitor's
// (SessionTTL, or SessionMax when longer), so the device that held it is told the
// place moved for as long as it could have been using it. After that the id is
// simply unknown, as any lapsed place's is.
func (l Limits) MovedKeep() time.Duration { return max(l.Keep(), l.SessionTTL, l.SessionMax) }
