package store

// Content stores inspiration and corpus records, capture tasks and assets.
type Content interface {
}
