dist_doc_DATA += doc/deck.md
