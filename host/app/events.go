package app

import (
	"context"

	"github.com/reelforge/reelforge/host/events"
	"github.com/reelforge/reelforge/host/store"
)

// frameChannel is the LISTEN/NOTIFY channel that carries WebSocket frames between hosts.
const frameChannel = "reelforge_ws_frames"

// wireEvents builds the WebSocket hub (with a bus between hosts on PostgreSQL), the outbound
// event worker and the time-driven events. Services that send client frames take h.Hub as their
// events.Notifier.
func (h *Host) wireEvents() {
	var bus events.Bus
	if ps, ok := h.Store.(store.PubSub); ok && h.Store.Name() == "postgres" {
		bus = events.StoreBus{PubSub: ps, Channel: frameChannel}
	}
	h.Hub = events.NewHub(events.HubOptions{Bus: bus, Log: h.Log, SignURLs: h.FileURLs.SignJSON})
	cfg := h.Config
	h.Events = events.NewWorker(h.Store, events.WorkerConfig{URL: cfg.EventWebhookURL, Secret: cfg.WebhookSecret,
		Enabled: cfg.NotificationsOn, Timeout: cfg.NotificationTimeout, BatchSize: cfg.BatchSize,
		Interval: cfg.BatchInterval, EnabledEvents: cfg.EnabledEvents, Lease: cfg.Lease, SignURLs: h.FileURLs.SignJSON, Log: h.Log})
	// Only the leader (advisory lock on PostgreSQL) emits the time-driven events.
	h.Scheduled = events.NewScheduled(h.Store, events.ScheduledOptions{Log: h.Log, Leader: h.leader.IsLeader})
}

// startEvents starts the hub's listener, the delivery worker and the scheduled events.
func (h *Host) startEvents(ctx context.Context) error {
	if err := h.Hub.Start(ctx); err != nil {
		return err
	}
	if err := h.Events.Start(ctx); err != nil {
		h.Hub.Stop()
		return err
	}
	if err := h.Scheduled.Start(ctx); err != nil {
		h.Events.Stop()
		h.Hub.Stop()
		return err
	}
	return nil
}

// stopEvents stops them in reverse order.
func (h *Host) stopEvents() {
	h.Scheduled.Stop()
	h.Events.Stop()
	h.Hub.Stop()
}
