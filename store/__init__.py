"""The SQLite store: schema, the one writer, readers and exports. Imports none of the other packages."""
from store.merge import MergeError, merge_stores
from store.readers import StoreReader
from store.descriptions import CANNED_QUERIES, TABLES
from store.schema import SCHEMA_VERSION, StoreError, open_db, table_columns
from store.writer import StoreWriter

__all__ = ["SCHEMA_VERSION", "open_db", "table_columns", "StoreError", "TABLES", "CANNED_QUERIES", "StoreWriter", "StoreReader", "MergeError", "merge_stores"]
