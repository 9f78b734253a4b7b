package plugins

// Restarts returns how many times each engine's plugin was restarted, for the metrics.
func (s *Set) Restarts() map[string]int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make(map[string]int, len(s.sups))
	for n, sup := range s.sups {
		out[n] = sup.Restarts()
	}
	return out
}
