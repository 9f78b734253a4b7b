package store

// Knowledge stores knowledge sources, documents, chunks, embeddings, queries and facts.
type Knowledge interface {
}
