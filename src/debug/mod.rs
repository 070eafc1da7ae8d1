//! Graphviz printing of the three graphs and trace export.
