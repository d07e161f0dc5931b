import type { ReactNode } from 'react';

/**
 * A table that scrolls sideways inside its frame when the window is narrow, and becomes one card
 * per row at phone widths (styles.css). The explicit roles keep it a table for assistive technology
 * when CSS changes how its rows are laid out.
 */
export function DataTable({ label, columns, className = '', children }: { label: string; columns: ReactNode[]; className?: string; children: ReactNode }) {
  return (
    <div className="table-wrap" role="region" aria-label={label} tabIndex={0}>
      <table className={`table table-cards ${className}`.trimEnd()} role="table">
        <thead role="rowgroup">
          <tr role="row">
            {columns.map((column, index) => (
              <th key={index} scope="col" role="columnheader">
                {column}
              </th>
            ))}
          </tr>
        </thead>
        <tbody role="rowgroup">{children}</tbody>
      </table>
    </div>
  );
}
