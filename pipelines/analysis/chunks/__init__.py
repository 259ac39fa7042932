"""Chunk segmentation: host-side chunk markers (the project's, engines' forwards) -> stored
`chunks` rows."""
