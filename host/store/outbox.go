package store

// Outbox stores outbound events waiting for delivery.
type Outbox interface {
}
