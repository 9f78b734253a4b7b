package app

// EngineRestarts reports each engine plugin's restarts for the Prometheus metrics (nothing with
// plugins off).
func (e engineStates) EngineRestarts() map[string]int {
	if e.h.Plugins == nil {
		return map[string]int{}
	}
	return e.h.Plugins.Restarts()
}
