"""What both front ends show of a result: sentences, tables as text and plotext charts, Textual-free."""
