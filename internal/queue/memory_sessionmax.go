package queue

import "time"

// admissionLink is an admitted visitor's place in the memory store's byAdmission list:
// the admission time (v.at moves on with every touch) and its neighbours. Its 24
// bytes take a visitor from the 64-byte allocation class to the 80-byte one, queued
// ones included: BenchmarkMemoryBytesPerWaiter reads 129 bytes per waiter where it read
// 113, within the 200-byte budget. A map of admission times instead would cost each
// admission a hash and an admitted visitor about 60 bytes.
type admissionLink struct {
	at         int64 // admitted at, unix nanoseconds
	prev, next *memVisitor
}

// admissionList is an intrusive doubly linked list of the admitted visitors in the
// order they were admitted, so ending the sessions that reached Limits.SessionMax
// looks only at its front.
type admissionList struct {
	front, back *memVisitor
}

// pushBack appends v, admitted at v.at.
func (l *admissionList) pushBack(v *memVisitor) {
	v.admission = admissionLink{at: v.at, prev: l.back}
	if l.back != nil {
		l.back.admission.next = v
	} else {
		l.front = v
	}
	l.back = v
}

func (l *admissionList) remove(v *memVisitor) {
	a := &v.admission
	if a.prev != nil {
		a.prev.admission.next = a.next
	} else {
		l.front = a.next
	}
	if a.next != nil {
		a.next.admission.prev = a.prev
	} else {
		l.back = a.prev
	}
	a.prev, a.next = nil, nil
}

// endSessionsLocked drops the visitors admitted SessionMax or longer before nanos.
// Admissions arrive in time order but for concurrent calls' slightly different
// times, so the front-only sweep may end a session a few milliseconds late, never
// early.
func (s *MemoryStore) endSessionsLocked(nanos int64, lim Limits) {
	if lim.SessionMax <= 0 {
		return
	}
	for v := s.byAdmission.front; v != nil && v.admission.at+int64(lim.SessionMax) <= nanos; v = s.byAdmission.front {
		s.removeLocked(v)
	}
}

// admittedAt is when admitted visitor v's session began, to the millisecond as the
// Redis store keeps it (Status.Since).
func admittedAt(v *memVisitor) time.Time {
	return time.UnixMilli(time.Unix(0, v.admission.at).UnixMilli())
}
