"""The SQLite store: schema, the one writer, readers and exports. Imports none of the other packages."""
from store.merge import MergeError, merge_stores
from store.readers import StoreReader
from store.schema import SCHEMA_VERSION, open_db
from store.writer import StoreWriter

__all__ = ["SCHEMA_VERSION", "open_db", "StoreWriter", "StoreReader", "MergeError", "merge_stores"]
