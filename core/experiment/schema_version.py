"""The version of the saved experiment and matrix documents, apart from their declared types
(core/experiment/document.py): the writers need the number alone, and the types cost about 35 ms to import."""

SCHEMA_VERSION = 1  # "version" of a saved experiment or matrix; a reader refuses another
