"""deskbench's domain, in sub-packages by capability."""
