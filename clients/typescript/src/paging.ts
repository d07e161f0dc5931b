export interface Connection<Node> {
  edges: { cursor: string; node: Node }[];
  pageInfo: { hasNextPage: boolean; endCursor: string | null };
}

/**
 * The items of every page of a connection, fetched as they are consumed. `cursor` is the position
 * after the last item handed out (and after an empty page, the position the service returned): store
 * it, and pass it as `after` later to carry on from there, on a forward feed without missing anything.
 */
export class Paginated<Node> implements AsyncIterable<Node> {
  private position: string | undefined;

  constructor(
    private readonly fetchPage: (after: string | undefined) => Promise<Connection<Node>>,
    after?: string,
  ) {
    this.position = after;
  }

  get cursor(): string | undefined {
    return this.position;
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Node> {
    for (;;) {
      const page = await this.fetchPage(this.position);
      for (const edge of page.edges) {
        this.position = edge.cursor;
        yield edge.node;
      }
      this.position = page.pageInfo.endCursor ?? this.position;
      if (!page.pageInfo.hasNextPage) return;
    }
  }

  /** Every remaining item, in order (for small result sets: a feed of millions belongs in a `for await`). */
  async toArray(): Promise<Node[]> {
    const items: Node[] = [];
    for await (const item of this) items.push(item);
    return items;
  }
}
