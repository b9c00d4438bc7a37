-- Every (period, slot) cell of the fold, for the report's period x slot heatmap. Needs fold.sql.
SELECT period_no, slot, tp99, mean_prompt, n FROM fold_cells ORDER BY period_no, slot;
