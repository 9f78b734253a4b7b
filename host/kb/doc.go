// Package kb is the knowledge base: Service ingests text and files, searches them (hybrid keyword
// plus vector, SPEC.md rules 3 to 6), answers with citations, and keeps the audit log, feedback,
// metrics, facts and the eval. Start at Service and its Search, Ask and Ingest methods.
//
// One file per concern: kb.go (the Service, its options and limits), ingest.go, batch.go (many
// documents a call), search.go, vectors.go (the in-memory vector leg) and veccache.go (its
// bounded cache), basis.go (the hits that ground an answer), ask.go, content.go (searches for
// generated content), queries.go (feedback and metrics), eval.go, facts.go, reindex.go and
// delete.go.
//
// The store (host/store) does the SQL; the sub-packages are the pure building blocks the service
// puts together:
//
//   - segment: Unicode normalisation and the one segmentation shared by indexing, queries and the
//     local embedder (Latin words, Chinese characters and bigrams).
//   - chunk: splitting text by heading and paragraph with a sliding window.
//   - parse: file bytes to plain text (txt, md, json, csv, html, pdf, docx).
//   - embed: the Embedder interface, the local hashing embedder and an OpenAI-compatible client.
//   - llm: an OpenAI-compatible chat client, the extractive answerer, citation checks and rerank.
//   - rank: the one ranking of every search path (BM25 and the fusion of the keyword and vector
//     legs, SPEC.md rule 5); the stores only return candidates and statistics.
//
// Its retrieval benchmark over ../shared/bench is bench/kbbench, apart from the product.
package kb
