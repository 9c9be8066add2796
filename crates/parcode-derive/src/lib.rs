//! `#[derive(ParcodeObject)]` for `binfmt-parcode`, with the attributes of
//! the `parcode` 0.6.1 derive: a struct's plain fields go into its chunk's
//! payload, in declaration order; fields marked `#[parcode(chunkable)]` or
//! `#[parcode(map)]` become child chunks, in declaration order.
//!
//! ```text
//! struct Level { id: u64, name: String, #[parcode(chunkable)] tiles: Vec<u32> }
//!
//! chunk(Level): payload = bincode(id) bincode(name) │ children = [tiles container]
//! LevelLazy<'a> { id: u64, name: String, tiles: ParcodeCollectionPromise<'a, u32> }
//! ```
//!
//! For `struct Foo` it generates the writer (`ParcodeVisitor`, and
//! `SerializationJob` for the struct's own chunk), the eager reader
//! (`ParcodeNative`, and `ParcodeItem` for `Vec<Foo>` shards), and the lazy
//! mirror `FooLazy<'a>` (`ParcodeLazyRef`), whose plain fields are values
//! and whose chunkable fields are promises.
//!
//! Field attributes, as the reference spells them: `chunkable`, `map`
//! (implies chunkable; a `HashMap` in buckets), `compression = "lz4" |
//! "zstd" | "none"` (case-insensitive; on a plain field it has no effect, as
//! in the reference). A struct attribute `#[parcode(crate = "path")]` names
//! the runtime crate when it cannot be found in `Cargo.toml` (by default it is
//! whatever name the package `binfmt-parcode` has there: `parcode` for a
//! drop-in rename, `binfmt_parcode` otherwise).
//!
//! Generated code names only the runtime's `#[doc(hidden)] __private`
//! module (as serde's derive does), and decodes through the runtime's
//! bounded decoders, so no length read from a file allocates beyond what
//! the payload holds.

#![forbid(unsafe_code)]

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as Tokens};
use quote::{format_ident, quote};
use syn::{Attribute, Data, DeriveInput, Fields, Ident, LitStr, Type, parse_macro_input};

/// Derives the PAR4 writer, eager reader and lazy mirror of a struct with
/// named fields (or a unit struct).
#[proc_macro_derive(ParcodeObject, attributes(parcode))]
pub fn derive_parcode_object(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    expand(&input)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// A field of the struct, in declaration order.
struct Field {
    ident: Ident,
    ty: Type,
    remote: Option<Remote>,
}

/// How a chunkable field is written.
struct Remote {
    compression_id: u8,
    is_map: bool,
}

fn expand(input: &DeriveInput) -> syn::Result<Tokens> {
    let name = &input.ident;
    let krate = runtime_path(&input.attrs)?;
    if !input.generics.params.is_empty() {
        return Err(syn::Error::new_spanned(
            &input.generics,
            "ParcodeObject does not support generic structs (nor does parcode 0.6.1)",
        ));
    }
    let Data::Struct(data) = &input.data else {
        return Err(syn::Error::new(
            name.span(),
            "ParcodeObject only supports structs",
        ));
    };
    let fields = match &data.fields {
        Fields::Named(named) => named
            .named
            .iter()
            .map(|field| {
                Ok(Field {
                    ident: field
                        .ident
                        .clone()
                        .ok_or_else(|| syn::Error::new_spanned(field, "a named field"))?,
                    ty: field.ty.clone(),
                    remote: field_attributes(&field.attrs)?,
                })
            })
            .collect::<syn::Result<Vec<_>>>()?,
        Fields::Unit => Vec::new(),
        Fields::Unnamed(unnamed) => {
            return Err(syn::Error::new_spanned(
                unnamed,
                "ParcodeObject supports structs with named fields (and unit structs), not tuple structs",
            ));
        }
    };
    let lazy_name = format_ident!("{}Lazy", name);
    let visibility = &input.vis;
    let locals: Vec<&Field> = fields.iter().filter(|f| f.remote.is_none()).collect();
    let remotes: Vec<&Field> = fields.iter().filter(|f| f.remote.is_some()).collect();
    let local_names: Vec<&Ident> = locals.iter().map(|f| &f.ident).collect();
    let local_types: Vec<&Type> = locals.iter().map(|f| &f.ty).collect();
    let local_labels: Vec<String> = local_names.iter().map(|n| n.to_string()).collect();
    let remote_names: Vec<&Ident> = remotes.iter().map(|f| &f.ident).collect();
    let remote_types: Vec<&Type> = remotes.iter().map(|f| &f.ty).collect();
    let remote_labels: Vec<String> = remote_names.iter().map(|n| n.to_string()).collect();
    let remote_count = remotes.len();
    let configs: Vec<Tokens> = remotes
        .iter()
        .map(|field| match &field.remote {
            Some(Remote {
                compression_id,
                is_map,
            }) if *compression_id > 0 || *is_map => quote! {
                ::core::option::Option::Some(#krate::__private::JobConfig {
                    compression_id: #compression_id,
                    is_map: #is_map,
                })
            },
            _ => quote! { ::core::option::Option::None },
        })
        .collect();
    let all_names: Vec<&Ident> = fields.iter().map(|f| &f.ident).collect();
    // The plain fields, decoded from `reader`: as one tuple (one decoder
    // call per item, the same bytes as field after field) when serde has
    // tuples that long, otherwise field by field.
    let struct_label = name.to_string();
    let tuple = (1..=16).contains(&locals.len());
    let read_locals = |reader: Tokens| {
        if tuple {
            quote! {
                let ( #( #local_names, )* ): ( #( #local_types, )* ) =
                    #krate::__private::read_local(#reader, #struct_label)?;
            }
        } else {
            quote! {
                #( let #local_names: #local_types = #krate::__private::read_local(#reader, #local_labels)?; )*
            }
        }
    };
    let write_locals = |writer: Tokens| {
        if tuple {
            quote! { #krate::__private::write_local(&( #( &self.#local_names, )* ), #writer)?; }
        } else {
            quote! { #( #krate::__private::write_local(&self.#local_names, #writer)?; )* }
        }
    };
    let write_to_writer = write_locals(quote! { writer });
    let write_to_payload = write_locals(quote! { &mut payload });
    let read_locals_owned = read_locals(quote! { &mut reader });
    let read_locals_borrowed = read_locals(quote! { reader });
    let skip_locals = if tuple {
        quote! { #krate::__private::read_local::<( #( #local_types, )* )>(reader, #struct_label)?; }
    } else {
        quote! { #( #krate::__private::read_local::<#local_types>(reader, #local_labels)?; )* }
    };
    let skip_many = if tuple {
        quote! {
            fn skip_many(reader: &mut ::std::io::Cursor<&[u8]>, count: usize) -> #krate::__private::Result<()> {
                #krate::__private::skip_elements::<( #( #local_types, )* )>(reader, count)
            }
        }
    } else {
        quote! {}
    };
    // Items with plain fields only: a whole shard in one decoder call.
    let fill_slots = if tuple && remotes.is_empty() {
        quote! {
            fn fill_slots(
                reader: &mut ::std::io::Cursor<&[u8]>,
                _children: &mut ::std::vec::IntoIter<#krate::__private::Chunk<'_>>,
                slots: &mut [::core::mem::MaybeUninit<Self>],
                written: &mut usize,
            ) -> #krate::__private::Result<()> {
                #krate::__private::fill_plain(
                    reader,
                    slots,
                    written,
                    |( #( #local_names, )* ): ( #( #local_types, )* )| Self { #( #local_names ),* },
                )
            }
        }
    } else {
        quote! {}
    };
    // Destructuring a decoded value: locals kept, remotes' inline copies dropped.
    let destructure: Vec<Tokens> = fields
        .iter()
        .map(|field| {
            let ident = &field.ident;
            if field.remote.is_some() {
                quote! { #ident: _ }
            } else {
                quote! { #ident }
            }
        })
        .collect();

    Ok(quote! {
        impl #krate::__private::ParcodeVisitor for #name {
            fn visit<'a>(
                &'a self,
                graph: &mut #krate::__private::TaskGraph<'a>,
                parent_id: ::core::option::Option<#krate::__private::ChunkId>,
                config_override: ::core::option::Option<#krate::__private::JobConfig>,
            ) {
                let job = #krate::__private::ParcodeVisitor::create_job(self, config_override);
                let my_id = graph.add_node(job);
                if let ::core::option::Option::Some(parent) = parent_id {
                    graph.link_parent_child(parent, my_id);
                }
                #(
                    #krate::__private::ParcodeVisitor::visit(
                        &self.#remote_names, graph, ::core::option::Option::Some(my_id), #configs,
                    );
                )*
            }

            fn visit_inlined<'a>(
                &'a self,
                graph: &mut #krate::__private::TaskGraph<'a>,
                parent_id: #krate::__private::ChunkId,
                _config_override: ::core::option::Option<#krate::__private::JobConfig>,
            ) {
                let _ = (&graph, parent_id);
                #(
                    #krate::__private::ParcodeVisitor::visit(
                        &self.#remote_names, graph, ::core::option::Option::Some(parent_id), #configs,
                    );
                )*
            }

            fn create_job<'a>(
                &'a self,
                config_override: ::core::option::Option<#krate::__private::JobConfig>,
            ) -> ::std::boxed::Box<dyn #krate::__private::SerializationJob<'a> + 'a> {
                #krate::__private::job_for(self, config_override)
            }

            fn serialize_shallow<W: ::std::io::Write>(&self, writer: &mut W) -> #krate::__private::Result<()>
            where
                Self: #krate::__private::serde::Serialize,
            {
                let _ = &writer;
                #write_to_writer
                ::core::result::Result::Ok(())
            }

            fn serialize_slice<W: ::std::io::Write>(slice: &[Self], writer: &mut W) -> #krate::__private::Result<()>
            where
                Self: ::core::marker::Sized + #krate::__private::serde::Serialize,
            {
                #krate::__private::write_local(&(slice.len() as u64), writer)?;
                for item in slice {
                    #krate::__private::ParcodeVisitor::serialize_shallow(item, writer)?;
                }
                ::core::result::Result::Ok(())
            }
        }

        impl<'a> #krate::__private::SerializationJob<'a> for #name {
            fn execute(
                &self,
                _children: &[#krate::__private::ChildRef],
            ) -> #krate::__private::Result<::std::vec::Vec<u8>> {
                let mut payload = ::std::vec::Vec::new();
                #write_to_payload
                ::core::result::Result::Ok(payload)
            }

            fn estimated_size(&self) -> usize {
                ::core::mem::size_of::<Self>()
            }
        }

        impl #krate::__private::ParcodeNative for #name {
            fn from_node(node: &#krate::__private::Chunk<'_>) -> #krate::__private::Result<Self> {
                let payload = node.read_raw()?;
                let mut reader = ::std::io::Cursor::new(&*payload);
                #read_locals_owned
                #krate::__private::end_of_payload(&reader, node)?;
                let mut children = node.children()?.into_iter();
                #( let #remote_names: #remote_types = #krate::__private::load_child(&mut children, #remote_labels)?; )*
                #krate::__private::end_of_children(&mut children, node)?;
                ::core::result::Result::Ok(Self { #( #all_names ),* })
            }
        }

        impl #krate::__private::ParcodeItem for #name {
            fn read_from_shard(
                reader: &mut ::std::io::Cursor<&[u8]>,
                children: &mut ::std::vec::IntoIter<#krate::__private::Chunk<'_>>,
            ) -> #krate::__private::Result<Self> {
                let _ = &children;
                #read_locals_borrowed
                #( let #remote_names: #remote_types = #krate::__private::load_child(children, #remote_labels)?; )*
                ::core::result::Result::Ok(Self { #( #all_names ),* })
            }

            const REMOTE_FIELDS: ::core::option::Option<usize> = ::core::option::Option::Some(#remote_count);

            fn skip_in_shard(reader: &mut ::std::io::Cursor<&[u8]>) -> #krate::__private::Result<()> {
                let _ = &reader;
                #skip_locals
                ::core::result::Result::Ok(())
            }

            #skip_many

            #fill_slots
        }

        #[derive(Debug)]
        #[allow(missing_docs)]
        #visibility struct #lazy_name<'a> {
            #( pub #local_names: #local_types, )*
            #( pub #remote_names: <#remote_types as #krate::__private::ParcodeLazyRef<'a>>::Lazy, )*
            _marker: ::core::marker::PhantomData<&'a ()>,
        }

        impl<'a> #krate::__private::ParcodeLazyRef<'a> for #name {
            type Lazy = #lazy_name<'a>;

            fn create_lazy(node: #krate::__private::Chunk<'a>) -> #krate::__private::Result<Self::Lazy> {
                let payload = node.read_raw()?;
                let mut reader = ::std::io::Cursor::new(&*payload);
                let mut children = node.children()?.into_iter();
                let lazy = <Self as #krate::__private::ParcodeLazyRef<'a>>::read_lazy_from_stream(
                    &mut reader, &mut children,
                )?;
                #krate::__private::end_of_payload(&reader, &node)?;
                #krate::__private::end_of_children(&mut children, &node)?;
                ::core::result::Result::Ok(lazy)
            }

            fn read_lazy_from_stream(
                reader: &mut ::std::io::Cursor<&[u8]>,
                children: &mut ::std::vec::IntoIter<#krate::__private::Chunk<'a>>,
            ) -> #krate::__private::Result<Self::Lazy> {
                let _ = (&reader, &children);
                #read_locals_borrowed
                #(
                    let #remote_names = <#remote_types as #krate::__private::ParcodeLazyRef<'a>>::create_lazy(
                        #krate::__private::next_child(children, #remote_labels)?,
                    )?;
                )*
                ::core::result::Result::Ok(#lazy_name {
                    #( #all_names, )*
                    _marker: ::core::marker::PhantomData,
                })
            }

            fn lazy_from_value(
                value: Self,
                children: &mut ::std::vec::IntoIter<#krate::__private::Chunk<'a>>,
            ) -> #krate::__private::Result<Self::Lazy> {
                let _ = &children;
                let Self { #( #destructure ),* } = value;
                #(
                    let #remote_names = <#remote_types as #krate::__private::ParcodeLazyRef<'a>>::create_lazy(
                        #krate::__private::next_child(children, #remote_labels)?,
                    )?;
                )*
                ::core::result::Result::Ok(#lazy_name {
                    #( #all_names, )*
                    _marker: ::core::marker::PhantomData,
                })
            }
        }
    })
}

/// The path of the runtime crate: `#[parcode(crate = "...")]`, or the name
/// `binfmt-parcode` has in the user's `Cargo.toml` (`parcode` when renamed).
fn runtime_path(attrs: &[Attribute]) -> syn::Result<Tokens> {
    let mut explicit = None;
    for attr in attrs.iter().filter(|attr| attr.path().is_ident("parcode")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("crate") {
                let path: LitStr = meta.value()?.parse()?;
                explicit = Some(path.parse::<syn::Path>()?);
                Ok(())
            } else {
                Err(meta.error("unknown parcode struct attribute; supported: crate = \"path\""))
            }
        })?;
    }
    if let Some(path) = explicit {
        return Ok(quote! { #path });
    }
    let name = match proc_macro_crate::crate_name("binfmt-parcode") {
        // The crate itself (its tests, examples and doc tests are other
        // crates that see it under its library name; the library declares
        // `extern crate self as binfmt_parcode`).
        Ok(proc_macro_crate::FoundCrate::Itself) => "binfmt_parcode".to_owned(),
        Ok(proc_macro_crate::FoundCrate::Name(name)) => name,
        // Not found in Cargo.toml (a build outside cargo): the drop-in name.
        Err(_) => "parcode".to_owned(),
    };
    let ident = Ident::new(&name, Span::call_site());
    Ok(quote! { ::#ident })
}

/// A field's `#[parcode(...)]` attributes: `None` for a plain field.
fn field_attributes(attrs: &[Attribute]) -> syn::Result<Option<Remote>> {
    let (mut chunkable, mut is_map, mut compression_id) = (false, false, 0u8);
    for attr in attrs.iter().filter(|attr| attr.path().is_ident("parcode")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("chunkable") {
                chunkable = true;
            } else if meta.path.is_ident("map") {
                is_map = true;
            } else if meta.path.is_ident("compression") {
                let value: LitStr = meta.value()?.parse()?;
                // The reference's ids: the writer turns "zstd" into LZ4
                // (spec/parcode.md: no PAR4 reader decodes id 2).
                compression_id = match value.value().to_lowercase().as_str() {
                    "none" => 0,
                    "lz4" => 1,
                    "zstd" => 2,
                    _ => {
                        return Err(meta.error(
                            "Unknown compression algorithm: expected \"lz4\", \"zstd\" or \"none\"",
                        ));
                    }
                };
            } else {
                return Err(meta.error(
                    "Unknown parcode attribute key. Supported: chunkable, map, compression",
                ));
            }
            Ok(())
        })?;
    }
    Ok((chunkable || is_map).then_some(Remote {
        compression_id,
        is_map,
    }))
}
