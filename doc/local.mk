dist_doc_DATA += doc/deck.md
dist_doc_DATA += README.md doc/design.md doc/testing.md doc/results.md
dist_doc_DATA += doc/formats.md
