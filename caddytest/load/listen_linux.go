package main

// startListening hands the set's sockets to one epoll loop (epoll_linux.go).
func (s *waiterSet) startListening() error {
	l, err := newListener(s.start)
	if err != nil {
		return err
	}
	s.listen = l.add
	return nil
}
