"""The kinds of table a Dataset reads, behind one protocol (:mod:`.protocol`)."""

from arrowmix._dataset.tables.protocol import Mapper, Table, TableReading, as_table

__all__ = ["Mapper", "Table", "TableReading", "as_table"]
