// Package kb is the knowledge base's pure library: no database and no HTTP server.
//
// Its sub-packages are the building blocks the store and the API put together:
//
//   - segment: Unicode normalisation and the one segmentation shared by indexing, queries and the
//     local embedder (Latin words, Chinese character bigrams).
//   - chunk: splitting text by heading and paragraph with a sliding window.
//   - parse: file bytes to plain text (txt, md, json, csv, html, pdf, docx).
//   - embed: the Embedder interface, the local hashing embedder and an OpenAI-compatible client.
//   - llm: an OpenAI-compatible chat client, the extractive answerer, citation checks and rerank.
//   - rank: the in-memory hybrid scoring of SPEC.md rule 5.
//   - kbbench: the retrieval benchmark over ../shared/bench.
package kb
